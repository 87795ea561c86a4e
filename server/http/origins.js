import { AppError } from '../errors.js'
import { SAME_ORIGIN } from '../config.js'

// Which browser origins may call the server, for REST (CORS) and the Socket.IO handshake alike.
// `same-origin` (the default while auth is off) serves only the pages this server hands out: a
// browser calling from another site is refused outright, not merely denied the response, since a
// request that needs no preflight (a simple POST) would otherwise still reach the handler.

/** @typedef {'*' | typeof SAME_ORIGIN | string[]} AllowedOrigins */

/** @param {string} corsOrigin the `CORS_ORIGIN` setting @returns {AllowedOrigins} */
export function allowedOrigins (corsOrigin) {
  if (corsOrigin === '*' || corsOrigin === SAME_ORIGIN) return corsOrigin
  return corsOrigin.split(',').map(origin => origin.trim())
}

/**
 * Whether a request with this `Origin` header may proceed. Clients that send none are not browsers
 * (or are on the server's own page, for a same-origin GET).
 * @param {AllowedOrigins} allowed
 * @param {string | undefined} origin
 * @param {string | undefined} host the request's `Host` header
 */
export function originAllowed (allowed, origin, host) {
  if (origin === undefined || allowed === '*') return true
  if (allowed === SAME_ORIGIN) return hostOf(origin) === host
  return allowed.includes(origin)
}

/**
 * The `origin` option of the cors package: no CORS headers at all for `same-origin`.
 * @param {AllowedOrigins} allowed
 * @returns {string | string[] | false}
 */
export function corsHeaderOf (allowed) {
  return allowed === SAME_ORIGIN ? false : allowed
}

/**
 * Express guard for `same-origin`: refuses a cross-origin browser request with FORBIDDEN before it
 * reaches a handler. Other settings leave the decision to the CORS headers.
 * @param {AllowedOrigins} allowed
 * @returns {import('express').RequestHandler}
 */
export function sameOriginOnly (allowed) {
  return (req, res, next) => {
    if (allowed !== SAME_ORIGIN || originAllowed(allowed, req.get('origin'), req.get('host'))) return next()
    next(new AppError('FORBIDDEN', 'requests from other origins are refused (CORS_ORIGIN=same-origin)'))
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
 * Whether a request may name this `Host`. A server on a loopback address with auth off answers only
 * to this machine's names, whatever `CORS_ORIGIN` allows: a page on another site can point its own
 * name at 127.0.0.1 (DNS rebinding), and its requests are then same-origin in the browser's eyes.
 * Non-browser clients and this server's own pages name localhost or the address itself.
 * @param {boolean} localOnly
 * @param {string | undefined} host the request's `Host` header
 */
export function hostAllowed (localOnly, host) {
  if (!localOnly || host === undefined) return true
  const name = host.replace(/:\d+$/, '').toLowerCase()
  return LOCAL_NAMES.has(name) || name.endsWith('.localhost')
}

const LOCAL_NAMES = new Set(['localhost', '127.0.0.1', '[::1]'])

/** @param {string} host a listening address */
export function isLoopback (host) {
  return host === 'localhost' || host === '::1' || host.startsWith('127.')
}

/**
 * Express guard for `hostAllowed`: refuses with FORBIDDEN a request for another name.
 * @param {boolean} localOnly
 * @returns {import('express').RequestHandler}
 */
export function localHostOnly (localOnly) {
  return (req, res, next) => {
    if (hostAllowed(localOnly, req.get('host'))) return next()
    next(new AppError('FORBIDDEN', 'this server answers only to localhost: it listens on a loopback address with auth off (set AUTH_SECRET or HOST to serve other names)'))
  }
}
