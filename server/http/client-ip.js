import proxyAddr from 'proxy-addr'

/**
 * The client's address as per-IP limits and audit lines see it: the connection's peer, or, behind
 * `trustProxy` reverse proxies, the address they put in X-Forwarded-For (the same rule as Express's
 * `trust proxy` with a hop count, so REST and sockets agree).
 * @param {number} trustProxy
 * @returns {(req: import('node:http').IncomingMessage) => string}
 */
export function clientIpOf (trustProxy) {
  const trust = (/** @type {string} */ _address, /** @type {number} */ hop) => hop < trustProxy
  return req => proxyAddr(req, trust)
}
