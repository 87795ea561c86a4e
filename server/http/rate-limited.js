import { limitKeyOf } from './client-ip.js'

/**
 * One point per request per client IP; over the limit, RATE_LIMITED with Retry-After.
 * @param {import('../limits/rate-limit.js').RateLimit} limit @param {import('../audit.js').Audit} audit
 * @returns {import('express').RequestHandler}
 */
export function rateLimited (limit, audit) {
  return (req, res, next) => {
    const ip = limitKeyOf(req.ip ?? 'unknown')
    limit.take(ip).then(() => next(), (/** @type {any} */ err) => {
      if (err?.code === 'RATE_LIMITED') {
        res.set('retry-after', String(Math.ceil(err.details.retryAfterMs / 1000)))
        audit.refusedFrom('http.rate', { ip, method: req.method, path: req.path })
      }
      next(err)
    })
  }
}
