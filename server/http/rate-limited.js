import { limitKeyOf } from './client-ip.js'

/**
 * Express middleware: one point of `limit` per request, keyed by client IP (an IPv6 client by its
 * /64); over the limit the request is refused with RATE_LIMITED and a Retry-After header.
 * @param {import('../limits/rate-limit.js').RateLimit} limit
 * @param {import('../audit.js').Audit} audit
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
