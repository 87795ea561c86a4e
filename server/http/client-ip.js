import ipaddr from 'ipaddr.js'
import proxyAddr from 'proxy-addr'

/**
 * The connection's peer or, behind `trustProxy` proxies, their X-Forwarded-For (Express's `trust
 * proxy` rule with a hop count, so REST and sockets agree), as `limitKeyOf` counts it.
 * @param {number} trustProxy @returns {(req: import('node:http').IncomingMessage) => string}
 */
export function clientIpOf (trustProxy) {
  const trust = (/** @type {string} */ _address, /** @type {number} */ hop) => hop < trustProxy
  return req => limitKeyOf(proxyAddr(req, trust))
}

/**
 * An IPv4 address, or an IPv6 address's /64: one subscriber holds a whole /64 to rotate through.
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
