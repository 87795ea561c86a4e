import http from 'node:http'
import cors from 'cors'
import express from 'express'
import { LevelDocStore } from './docs/level-doc-store.js'
import { DocRegistry } from './docs/doc-registry.js'
import { errorHandler, notFound } from './http/error-handler.js'
import { healthRoutes } from './http/health-routes.js'
import { requestLog } from './http/request-log.js'
import { sessionsRoutes } from './http/sessions-routes.js'
import { staticRoutes } from './http/static-routes.js'
import { createLogger } from './logger.js'
import { createMetrics } from './metrics.js'
import { createIo } from './realtime/io.js'
import { closeForEditors } from './realtime/editors.js'
import { LevelSessionStore } from './sessions/level-session-store.js'
import { SessionService } from './sessions/session-service.js'
import { openLevel } from './storage/level.js'

/**
 * Builds a Tandem server: Express REST API, Socket.IO realtime and the stores behind them. Touches no
 * environment, signal or port until `listen`; `server/index.js` is the process around it.
 *
 * What this process owns: the documents it has loaded (Y.Doc, awareness, write queue) and its sockets.
 * What it shares: sessions and document updates, through the store.
 *
 * @param {import('./config.js').Config} config
 * @param {{ logger?: import('pino').Logger }} [deps]
 */
export async function createServer (config, deps = {}) {
  const logger = deps.logger ?? createLogger(config)
  const db = await openLevel(config.dataDir)
  const docStore = new LevelDocStore(db, config)
  const sessionStore = new LevelSessionStore(db, config)

  /** @type {import('socket.io').Server | undefined} */
  let io // eslint-disable-line prefer-const -- read by the metrics gauges before it is assigned
  const metrics = createMetrics({
    connections: () => io?.engine.clientsCount ?? 0,
    documents: () => registry.size,
    editors: () => registry.editorTotal()
  })
  const registry = new DocRegistry({ store: docStore, config, logger, metrics })
  const sessions = new SessionService({
    store: sessionStore,
    docStore,
    registry,
    closeEditors: (docId, reason) => closeForEditors(registry, docId, reason),
    config
  })

  let closing = false
  const isReady = () => !closing && docStore.isReady()
  const corsOrigin = config.corsOrigin === '*' ? '*' : config.corsOrigin.split(',').map(origin => origin.trim())

  const app = express()
  app.disable('x-powered-by')
  app.use(requestLog(logger))
  app.use(cors({ origin: corsOrigin }))
  app.use(express.json({ limit: config.maxBodyBytes }))
  app.use('/api', healthRoutes({ storage: docStore.kind, broadcast: 'memory', isReady }))
  app.use('/api/sessions', sessionsRoutes({ sessions, registry }))
  app.get('/metrics', async (req, res) => {
    res.type(metrics.registry.contentType).send(await metrics.registry.metrics())
  })
  app.use(staticRoutes())
  app.use(notFound)
  app.use(errorHandler({ metrics }))

  const httpServer = http.createServer(app)
  io = createIo(httpServer, { registry, sessions, config, metrics, logger, corsOrigin })

  /** @type {Promise<void> | undefined} */
  let closed

  return {
    httpServer,
    io,
    registry,
    sessions,
    metrics,
    logger,

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
     * Stops accepting, disconnects clients, flushes every document, closes storage. Idempotent.
     * @returns {Promise<void>}
     */
    close () {
      closed ??= (async () => {
        closing = true
        // io.close() disconnects every socket (each one detaches from its documents) and closes the
        // HTTP server; idle keep-alive connections would hold that open, so drop them too.
        const ioClosed = /** @type {import('socket.io').Server} */ (io).close()
        httpServer.closeIdleConnections()
        await ioClosed.catch(() => {})
        await registry.closeAll()
        await docStore.close()
      })()
      return closed
    }
  }
}

/** @typedef {Awaited<ReturnType<typeof createServer>>} TandemServer */
