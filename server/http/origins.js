import { AppError } from '../errors.js'
import { SAME_ORIGIN } from '../config.js'

// Which browser origins may call the server, REST and handshake alike. `same-origin` refuses other
// sites outright, not just their responses: a simple POST needs no preflight and would reach the handler.

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
  if (allowed === SAME_ORIGIN) return hostOf(origin) === host
  return allowed.includes(origin)
}

/** The cors package's `origin`: no CORS headers for `same-origin`. @param {AllowedOrigins} allowed @returns {string | string[] | false} */
export function corsHeaderOf (allowed) {
  return allowed === SAME_ORIGIN ? false : allowed
}

/**
 * Refuses a cross-origin browser request before any handler; other settings leave it to CORS headers.
 * @param {AllowedOrigins} allowed @returns {import('express').RequestHandler}
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

/** @param {string} host a listening address */
export function isLoopback (host) {
  return host === 'localhost' || host === '::1' || host.startsWith('127.')
}

/** Express guard for `hostAllowed`. @param {boolean} localOnly @returns {import('express').RequestHandler} */
export function localHostOnly (localOnly) {
  return (req, res, next) => {
    if (hostAllowed(localOnly, req.get('host'))) return next()
    next(new AppError('FORBIDDEN', 'this server answers only to localhost: it listens on a loopback address with auth off (set AUTH_SECRET or HOST to serve other names)'))
  }
}
