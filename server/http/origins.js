import { AppError } from '../errors.js'
import { SAME_ORIGIN } from '../config.js'

// Which browser origins may call the server, REST and handshake alike. The server's own origin (its
// host is the request's Host) always may, whatever CORS_ORIGIN lists: the pages it serves must keep
// working when a list names only other sites. `same-origin` refuses other sites outright, not just
// their responses: a simple POST needs no preflight and would reach the handler.

/** @typedef {'*' | typeof SAME_ORIGIN | string[]} AllowedOrigins */

/** @param {string} corsOrigin the `CORS_ORIGIN` setting @returns {AllowedOrigins} */
export function allowedOrigins (corsOrigin) {
  if (corsOrigin === '*' || corsOrigin === SAME_ORIGIN) return corsOrigin
  return corsOrigin.split(',').map(origin => origin.trim())
}

/**
 * Clients that send no Origin are not browsers (or a same-origin GET).
 * @param {AllowedOrigins} allowed @param {string | undefined} origin
 * @param {string | undefined} host the request's `Host` header
 */
export function originAllowed (allowed, origin, host) {
  if (origin === undefined || allowed === '*') return true
  if (host !== undefined && hostOf(origin) === host.toLowerCase()) return true
  return allowed !== SAME_ORIGIN && allowed.includes(origin)
}

/** Why `origin` is refused, and the setting that would admit it. @param {string} origin */
export function originRefusal (origin) {
  return `the origin ${origin} is not allowed: add it to CORS_ORIGIN (comma-separated) to let its pages connect`
}

/**
 * The cors package's options, REST and Socket.IO alike: the allowed origin reflected, no CORS
 * headers for any other. @param {AllowedOrigins} allowed
 * @returns {import('cors').CorsOptions | import('cors').CorsOptionsDelegate<import('cors').CorsRequest>}
 */
export function corsOptionsOf (allowed) {
  if (allowed === '*') return { origin: '*' }
  return (req, callback) => callback(null, { origin: originAllowed(allowed, req.headers.origin, req.headers.host) })
}

/**
 * Refuses a cross-origin browser request before any handler; other settings leave it to CORS headers.
 * @param {AllowedOrigins} allowed @returns {import('express').RequestHandler}
 */
export function sameOriginOnly (allowed) {
  return (req, res, next) => {
    const origin = req.get('origin')
    if (allowed !== SAME_ORIGIN || origin === undefined || originAllowed(allowed, origin, req.get('host'))) return next()
    next(new AppError('FORBIDDEN', originRefusal(origin)))
  }
}

/** The `host[:port]` of an origin, or null for `null` and other non-URLs. @param {string} origin */
function hostOf (origin) {
  try {
    return new URL(origin).host
  } catch {
    return null
  }
}

/**
 * With auth off on loopback, only this machine's names: a page can point its own name at 127.0.0.1
 * (DNS rebinding), and its requests are then same-origin to the browser.
 * @param {boolean} localOnly @param {string | undefined} host the request's `Host` header
 */
export function hostAllowed (localOnly, host) {
  if (!localOnly || host === undefined) return true
  const name = host.replace(/:\d+$/, '').toLowerCase()
  return LOCAL_NAMES.has(name) || name.endsWith('.localhost')
}

const LOCAL_NAMES = new Set(['localhost', '127.0.0.1', '[::1]'])

/** Why `hostAllowed` refused, REST and handshake alike. */
export const LOCAL_ONLY_REFUSAL = 'this server answers only to localhost: it listens on a loopback address with auth off (set AUTH_SECRET or HOST to serve other names)'

/** @param {string} host a listening address */
export function isLoopback (host) {
  return host === 'localhost' || host === '::1' || host.startsWith('127.')
}

/** Express guard for `hostAllowed`. @param {boolean} localOnly @returns {import('express').RequestHandler} */
export function localHostOnly (localOnly) {
  return (req, res, next) => {
    if (hostAllowed(localOnly, req.get('host'))) return next()
    next(new AppError('FORBIDDEN', LOCAL_ONLY_REFUSAL))
  }
}
