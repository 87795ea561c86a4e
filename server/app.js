import http from 'node:http'
import cors from 'cors'
import express from 'express'
import { DocRegistry } from './docs/doc-registry.js'
import { errorHandler, notFound } from './http/error-handler.js'
import { healthRoutes } from './http/health-routes.js'
import { requestLog } from './http/request-log.js'
import { sessionsRoutes } from './http/sessions-routes.js'
import { staticRoutes } from './http/static-routes.js'
import { createLogger } from './logger.js'
import { createMetrics } from './metrics.js'
import { createCluster } from './realtime/cluster.js'
import { createIo, handleConnections } from './realtime/io.js'
import { SessionService } from './sessions/session-service.js'
import { openBackend } from './storage/backend.js'

/**
 * Builds a Tandem server: Express REST API, Socket.IO realtime and the stores behind them. Touches no
 * environment, signal or port until `listen`; `server/index.js` is the process around it.
 *
 * What this process owns: the documents it has loaded (Y.Doc, awareness, write queue) and its sockets.
 * What it shares with other processes: sessions and document updates, through the store; broadcasts
 * and small control messages (cluster.js), through the Socket.IO adapter.
 *
 * @param {import('./config.js').Config} config
 * @param {{ logger?: import('pino').Logger }} [deps]
 */
export async function createServer (config, deps = {}) {
  const logger = deps.logger ?? createLogger(config)
  const backend = await openBackend(config, logger)
  const corsOrigin = config.corsOrigin === '*' ? '*' : config.corsOrigin.split(',').map(origin => origin.trim())

  const app = express()
  const httpServer = http.createServer(app)
  const io = createIo(httpServer, { config, corsOrigin, adapter: backend.adapter })
  const metrics = createMetrics({
    worker: `${config.nodeName}/${process.env.NODE_APP_INSTANCE ?? '0'}`,
    connections: () => io.engine.clientsCount,
    documents: () => registry.size,
    editors: () => registry.editorTotal()
  })
  const registry = new DocRegistry({
    store: backend.docStore,
    config,
    logger,
    metrics,
    onStored: docId => cluster.docStored(docId)
  })
  const cluster = createCluster(io, { enabled: backend.adapter !== undefined, registry, metrics, logger })
  const sessions = new SessionService({ store: backend.sessionStore, docStore: backend.docStore, registry, cluster, config })
  handleConnections(io, { registry, sessions, cluster, config, metrics, logger })

  let closing = false
  const isReady = () => !closing && backend.isReady()

  app.disable('x-powered-by')
  app.use(requestLog(logger))
  app.use(cors({ origin: corsOrigin }))
  app.use(express.json({ limit: config.maxBodyBytes }))
  app.use('/api', healthRoutes({ storage: backend.storage, broadcast: backend.broadcast, isReady }))
  app.use('/api/sessions', sessionsRoutes({ sessions, registry }))
  app.get('/metrics', async (req, res) => {
    res.type(metrics.registry.contentType).send(await cluster.metricsText())
  })
  app.use(staticRoutes())
  app.use(notFound)
  app.use(errorHandler({ metrics }))

  /** @type {Promise<void> | undefined} */
  let closed

  return {
    httpServer,
    io,
    registry,
    sessions,
    metrics,
    logger,
    backend,

    /**
     * @param {number} [port]
     * @param {string} [host]
     * @returns {Promise<{ port: number, host: string, url: string }>}
     */
    listen (port = config.port, host = config.host) {
      return new Promise((resolve, reject) => {
        httpServer.once('error', reject)
        httpServer.listen(port, host, () => {
          httpServer.off('error', reject)
          const address = /** @type {import('node:net').AddressInfo} */ (httpServer.address())
          const urlHost = ['0.0.0.0', '::'].includes(host) ? 'localhost' : host
          resolve({ port: address.port, host, url: `http://${urlHost}:${address.port}` })
        })
      })
    },

    /**
     * Stops accepting, disconnects clients (who reconnect elsewhere: a drain, not a kick), flushes
     * every document, closes storage. Idempotent.
     * @returns {Promise<void>}
     */
    close () {
      closed ??= (async () => {
        closing = true
        // io.close() disconnects every socket (each one detaches from its documents) and closes the
        // HTTP server; idle keep-alive connections would hold that open, so drop them too.
        const ioClosed = io.close()
        httpServer.closeIdleConnections()
        await ioClosed.catch(() => {})
        await registry.closeAll()
        await backend.close()
      })()
      return closed
    }
  }
}

/** @typedef {Awaited<ReturnType<typeof createServer>>} TandemServer */
