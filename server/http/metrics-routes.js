import { Router } from 'express'
import { bearerOf, keyMatches } from '../auth/api-key.js'
import { AppError } from '../errors.js'

/**
 * `GET /metrics`: every worker's series, as Prometheus text or, asked for JSON first, prom-client's
 * JSON. It names hosts: a configured token is required (none: open, for development).
 * @param {object} deps @param {string} deps.token empty = open
 * @param {() => Promise<import('prom-client').Registry<import('prom-client').RegistryContentType>>} deps.gather
 * @param {import('../audit.js').Audit} deps.audit
 */
export function metricsRoutes ({ token, gather, audit }) {
  const router = Router()
  router.get('/metrics', async (req, res, next) => {
    if (token) {
      const presented = bearerOf(req)
      if (!keyMatches(token, presented)) {
        const reason = presented === undefined ? 'metrics need the token (Authorization: Bearer <METRICS_TOKEN>)' : 'the metrics token is not valid'
        audit.refusedFrom('http.metrics', { ip: req.ip, reason })
        res.set('www-authenticate', 'Bearer realm="metrics"')
        return next(new AppError('UNAUTHORIZED', reason))
      }
    }
    const registry = await gather()
    if (req.accepts(['text/plain', 'application/json']) === 'application/json') return res.json(await registry.getMetricsAsJSON())
    res.type(registry.contentType).send(await registry.metrics())
  })
  return router
}
