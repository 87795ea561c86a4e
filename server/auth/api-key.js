import { createHash, timingSafeEqual } from 'node:crypto'
import { AppError } from '../errors.js'

/** @param {import('express').Request} req @returns {string | undefined} */
export function bearerOf (req) {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '')
  return match?.[1]
}

/**
 * Constant time: both are hashed first, so neither contents nor lengths show in the timing.
 * @param {string} expected @param {string | undefined} presented
 */
export function keyMatches (expected, presented) {
  if (presented === undefined) return false
  const digest = (/** @type {string} */ value) => createHash('sha256').update(value).digest()
  return timingSafeEqual(digest(expected), digest(presented))
}

/**
 * Express infers a route's params from all its handlers, so a guard names them as strings.
 * @typedef {import('express').RequestHandler<Record<string, string>>} Guard
 */

/**
 * Who made a request that passed a guard, in `res.locals.caller`: the API key (or no key set, in
 * development), or a join token's user and role.
 * @typedef {{ kind: 'api-key' } | { kind: 'token', user: string, role: 'editor' | 'viewer' }} Caller
 */

/** @type {Caller} */
const API_KEY_CALLER = Object.freeze({ kind: 'api-key' })

/**
 * With no API_KEY (development) every guard lets the request through.
 * @param {object} deps @param {string} deps.apiKey
 * @param {import('./access.js').Access} deps.access @param {import('../audit.js').Audit} deps.audit
 * @returns {{ requireApiKey: Guard, requireApiKeyOrToken: Guard, requireApiKeyOrEditor: Guard }}
 */
export function apiGuards ({ apiKey, access, audit }) {
  /** @param {import('express').Request} req @param {string} reason */
  const refuse = (req, reason) => {
    audit.refusedFrom('http.auth', { ip: req.ip, method: req.method, path: req.path, reason })
    return new AppError('UNAUTHORIZED', reason)
  }

  /** @type {Guard} */
  const requireApiKey = (req, res, next) => {
    res.locals.caller = API_KEY_CALLER
    if (!apiKey) return next()
    const presented = bearerOf(req)
    if (presented === undefined) return next(refuse(req, 'this call needs the API key (Authorization: Bearer <key>)'))
    next(keyMatches(apiKey, presented) ? undefined : refuse(req, 'the API key is not valid'))
  }

  /**
   * Or a join token for the session in the path: an editor page may read the session it was invited to.
   * @type {Guard}
   */
  const requireApiKeyOrToken = (req, res, next) => {
    res.locals.caller = API_KEY_CALLER
    if (!apiKey) return next()
    const presented = bearerOf(req)
    if (presented === undefined) return next(refuse(req, 'this call needs the API key or a token for this session'))
    if (keyMatches(apiKey, presented)) return next()
    // With auth off there are no join tokens to check, and any string would pass as one.
    if (!access.enabled) return next(refuse(req, 'the API key is not valid'))
    access.authorize(presented, String(req.params.id)).then(({ user, role }) => {
      res.locals.caller = { kind: 'token', user, role }
      next()
    }, (/** @type {AppError} */ err) => {
      if (err.code !== 'UNAVAILABLE') audit.refusedFrom('http.auth', { ip: req.ip, method: req.method, path: req.path, reason: err.message })
      next(err)
    })
  }

  /**
   * As `requireApiKeyOrToken`, for calls that change the document: a viewer's token is FORBIDDEN.
   * @type {Guard}
   */
  const requireApiKeyOrEditor = (req, res, next) => {
    /** @param {unknown} [err] */
    const afterToken = (err) => {
      const caller = /** @type {Caller} */ (res.locals.caller)
      if (!err && caller.kind === 'token' && caller.role !== 'editor') err = new AppError('FORBIDDEN', 'a viewer may not change the document')
      next(err)
    }
    return requireApiKeyOrToken(req, res, afterToken)
  }

  return { requireApiKey, requireApiKeyOrToken, requireApiKeyOrEditor }
}
