import { Router } from 'express'
import { bearerOf, keyMatches } from '../auth/api-key.js'
import { AppError } from '../errors.js'

/**
 * `GET /metrics`: Prometheus text for every worker of the cluster, or prom-client's JSON of the same
 * series to a client that asks for `application/json` first (the load test: both ends are prom-client's,
 * so nothing parses text). A Prometheus scrape prefers text and gets it. It names hosts and counts
 * connections and documents, so with a token configured a scrape must present it as
 * `Authorization: Bearer`, compared in constant time like the API key. Without one it is open:
 * development, or `METRICS_PUBLIC=true` behind a network rule (deploy/nginx.conf).
 * @param {object} deps
 * @param {string} deps.token empty = open
 * @param {() => Promise<import('prom-client').Registry<import('prom-client').RegistryContentType>>} deps.gather the metrics to serve
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
