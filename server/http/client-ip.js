import ipaddr from 'ipaddr.js'
import proxyAddr from 'proxy-addr'

/**
 * The client's address as per-IP limits and audit lines see it (`limitKeyOf`): the connection's
 * peer, or, behind `trustProxy` reverse proxies, the address they put in X-Forwarded-For (the same
 * rule as Express's `trust proxy` with a hop count, so REST and sockets agree).
 * @param {number} trustProxy
 * @returns {(req: import('node:http').IncomingMessage) => string}
 */
export function clientIpOf (trustProxy) {
  const trust = (/** @type {string} */ _address, /** @type {number} */ hop) => hop < trustProxy
  return req => limitKeyOf(proxyAddr(req, trust))
}

/**
 * What per-IP limits count under: an IPv4 address (an IPv4-mapped IPv6 address as IPv4), or the /64
 * prefix of an IPv6 address. One subscriber holds a whole /64, 2^64 addresses to rotate through,
 * so counting IPv6 addresses one by one would limit nobody.
 * @param {string} address
 */
export function limitKeyOf (address) {
  try {
    const parsed = ipaddr.process(address)
    if (parsed.kind() === 'ipv4') return parsed.toString()
    return `${/** @type {ipaddr.IPv6} */ (parsed).parts.slice(0, 4).map(part => part.toString(16)).join(':')}::/64`
  } catch {
    return address
  }
}
