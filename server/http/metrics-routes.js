import { Router } from 'express'
import { bearerOf, keyMatches } from '../auth/api-key.js'
import { AppError } from '../errors.js'

/**
 * `GET /metrics`: Prometheus text for every worker of the cluster. It names hosts and counts
 * connections and documents, so with a token configured a scrape must present it as
 * `Authorization: Bearer`, compared in constant time like the API key. Without one it is open:
 * development, or `METRICS_PUBLIC=true` behind a network rule (deploy/nginx.conf).
 * @param {object} deps
 * @param {string} deps.token empty = open
 * @param {() => Promise<string>} deps.text the scrape
 * @param {string} deps.contentType
 * @param {import('../audit.js').Audit} deps.audit
 */
export function metricsRoutes ({ token, text, contentType, audit }) {
  const router = Router()
  router.get('/metrics', async (req, res, next) => {
    if (token) {
      const presented = bearerOf(req)
      if (!keyMatches(token, presented)) {
        const reason = presented === undefined ? 'metrics need the token (Authorization: Bearer <METRICS_TOKEN>)' : 'the metrics token is not valid'
        audit.refused('http.metrics', { ip: req.ip, reason })
        res.set('www-authenticate', 'Bearer realm="metrics"')
        return next(new AppError('UNAUTHORIZED', reason))
      }
    }
    res.type(contentType).send(await text())
  })
  return router
}
