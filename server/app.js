import http from 'node:http'
import cors from 'cors'
import express from 'express'
import helmet from 'helmet'
import { createAudit } from './audit.js'
import { Access } from './auth/access.js'
import { apiGuards } from './auth/api-key.js'
import { DocRegistry } from './documents/doc-registry.js'
import { errorHandler, notFound } from './http/error-handler.js'
import { clientIpOf } from './http/client-ip.js'
import { contentRoutes } from './http/content-routes.js'
import { healthRoutes } from './http/health-routes.js'
import { historyRoutes } from './http/history-routes.js'
import { metricsRoutes } from './http/metrics-routes.js'
import { allowedOrigins, corsOptionsOf, isLoopback, localHostOnly, sameOriginOnly } from './http/origins.js'
import { rateLimited } from './http/rate-limited.js'
import { requestLog } from './http/request-log.js'
import { sessionsRoutes } from './http/sessions-routes.js'
import { staticRoutes } from './http/static-routes.js'
import { createLimits } from './limits/limits.js'
import { createLogger } from './logger.js'
import { createMetrics, registerGauges } from './metrics.js'
import { admission, watchPendingConnections } from './realtime/admission.js'
import { createCluster } from './realtime/cluster.js'
import { closeForEditors, membershipsOf } from './realtime/editors.js'
import { relayOf } from './realtime/room-relay.js'
import { CLOSE_REASONS } from '../isomorphic/events.js'
import { createIo, handleConnections } from './realtime/io.js'
import { frameWriter } from './realtime/write-frame.js'
import { dropSlowConsumers } from './realtime/slow-consumers.js'
import { HistoryService } from './sessions/history-service.js'
import { SessionService } from './sessions/session-service.js'
import { openBackend } from './storage/backend.js'
import { StorageHealth } from './storage/storage-health.js'
import { createWebhooks } from './webhooks/webhooks.js'

/** A client that reads answers a close within a round trip; a stop must fit PM2's kill_timeout. */
const CLOSE_GRACE_MS = 1000

/**
 * Builds a Tandem server (REST, Socket.IO, stores); touches no environment, signal or port until
 * `listen`. This process owns the documents it loaded and its sockets; sessions and updates are
 * shared through the store, broadcasts and control messages through the adapter.
 * @param {import('./config.js').Config} config
 * @param {{ logger?: import('pino').Logger, now?: () => number }} [deps] `now`: the clock of
 *   per-connection rates, audit sampling and history, in ms (tests move it by hand)
 */
export async function createServer (config, deps = {}) {
  const logger = deps.logger ?? createLogger(config)
  const metrics = createMetrics({ worker: `${config.nodeName}/${process.env.NODE_APP_INSTANCE ?? '0'}` })
  const storageHealth = new StorageHealth(logger, metrics.storageErrors)
  const backend = await openBackend(config, logger, storageHealth)
  const corsOrigin = allowedOrigins(config.corsOrigin)
  // Auth off on loopback: only this machine's names (DNS rebinding; origins.js, hostAllowed).
  const localOnly = !config.authSecret && isLoopback(config.host)

  const app = express()
  const httpServer = http.createServer(app)
  const io = createIo(httpServer, { config, corsOrigin, localOnly, adapter: backend.adapter, logger })
  // Upgraded (WebSocket) connections leave the HTTP server's books: close() ends them by hand.
  /** @type {Set<import('node:stream').Duplex>} */
  const upgraded = new Set()
  /** @this {import('node:stream').Duplex} */
  function forgetUpgraded () { upgraded.delete(this) }
  httpServer.on('upgrade', (_req, socket) => {
    upgraded.add(socket)
    // `on`: a socket closes once, and `once` keeps a wrapper per connection.
    socket.on('close', forgetUpgraded)
  })
  const webhooks = createWebhooks({ config, backend, registry: metrics.registry, logger, copyOf: id => registry.get(id) })
  const now = deps.now ?? Date.now
  /** @type {import('./documents/live-doc.js').DocHistory | null} */
  const docHistory = config.historyRetentionMs > 0
    ? {
        now,
        // The join token's user; with auth off, the name the editor's awareness shows.
        authorOf: (doc, socket) => membershipsOf(socket).get(doc.id)?.user ?? doc.awareness.nameOf(socket),
        // After the documents' compactions, which run once the server is built.
        compact: (docId) => history.compact(docId),
        // Beside the load, never delaying it.
        loaded: (docId, updates, at) => {
          history.startFrom(docId, updates, at).catch(err => logger.warn({ err, doc: docId }, 'history could not be started'))
        }
      }
    : null
  const relayOptions = { awarenessIntervalMs: config.awarenessIntervalMs, fanOutSpacing: config.fanOutSpacing, metrics, writeFrame: frameWriter(logger) }
  const registry = new DocRegistry({
    store: backend.docStore,
    config,
    logger,
    metrics,
    feed: backend.feed,
    onInvalid: (docId, docs) => closeForEditors(docs, docId, CLOSE_REASONS.RELOAD),
    onRemoteUpdate: (doc, update) => relayOf(doc, io.of('/'), relayOptions).update(update),
    onApplied: (doc, applied) => {
      relayOf(doc, io.of('/'), relayOptions).updates(applied)
      webhooks.documentChanged(doc.id)
    },
    history: docHistory
  })
  registerGauges(metrics, {
    connections: () => io.engine.clientsCount,
    documents: () => registry.size,
    editors: () => registry.editorTotal()
  })
  const cluster = createCluster(io, { enabled: backend.adapter !== undefined, adapterReady: backend.adapterReady, feed: backend.feed, seats: webhooks.announcingSeats(backend.seats), registry, metrics, logger })
  const sessions = new SessionService({ store: backend.sessionStore, docStore: backend.docStore, registry, cluster, config, webhooks })
  /** @type {HistoryService} */
  const history = new HistoryService({ store: backend.historyStore, sessions, registry, config, now })
  const access = new Access({ config, store: backend.sessionStore })
  const limits = createLimits(config, backend.limitStore)
  const audit = createAudit(logger, { now: deps.now })
  const ipOf = clientIpOf(config.trustProxy)
  if (!access.enabled) {
    logger.warn({ host: config.host, corsOrigin: config.corsOrigin },
      'AUTH IS OFF: no AUTH_SECRET is set, so anyone who can reach this server can join and edit any session. ' +
      (isLoopback(config.host)
        ? 'Unless HOST and CORS_ORIGIN are set, it binds 127.0.0.1 and serves only its own pages (CORS_ORIGIN=same-origin). '
        : `It listens on ${config.host} (HOST), so that is anyone on its network. `) +
      'Set AUTH_SECRET and API_KEY before exposing it.')
  }
  const pendingConnections = watchPendingConnections(io, { config, clientIpOf: ipOf, audit })
  io.use(admission({ config, corsOrigin, limits, access, clientIpOf: ipOf, audit, pendingConnections }))
  handleConnections(io, { registry, sessions, cluster, config, metrics, logger, access, limits, audit, relayOptions, clientIpOf: ipOf, now: deps.now })
  const stopWatchingConsumers = dropSlowConsumers(io, { maxBufferedBytes: config.maxBufferedBytes, metrics, audit })

  let closing = false
  const isReady = () => !closing && backend.isReady() && storageHealth.error === null

  app.set('trust proxy', config.trustProxy)
  app.use(helmet())
  app.use(requestLog(logger))
  app.use(localHostOnly(localOnly))
  app.use(sameOriginOnly(corsOrigin))
  app.use(cors(corsOptionsOf(corsOrigin)))
  app.use('/api', healthRoutes({ storage: backend.storage, broadcast: backend.broadcast, auth: access.enabled, isReady, storageError: () => storageHealth.error }))
  const guards = apiGuards({ apiKey: config.apiKey, access, audit })
  // One limit per request, whichever of the session routers answers it.
  app.use('/api/sessions', rateLimited(limits.rest, audit))
  app.use('/api/sessions', sessionsRoutes({ sessions, registry, access, cluster, guards, audit, config, history }))
  app.use('/api/sessions', contentRoutes({ sessions, registry, guards, audit, config }))
  app.use('/api/sessions', historyRoutes({ history, registry, guards, audit, config }))
  app.use(metricsRoutes({ token: config.metricsToken, gather: () => cluster.metricsRegistry(), audit }))
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
    history,
    metrics,
    logger,
    backend,
    access,

    /** @param {number} [port] @param {string} [host] @returns {Promise<{ port: number, host: string, url: string }>} */
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
     * Stops accepting, disconnects clients (a drain: they reconnect elsewhere), writes every document,
     * closes storage. Idempotent.
     */
    close () {
      closed ??= (async () => {
        closing = true
        stopWatchingConsumers()
        // io.close() waits for every connection, and one that stopped reading never answers the close
        // frame: documents are written meanwhile, and what is still open after CLOSE_GRACE_MS is cut.
        const ioClosed = io.close()
        httpServer.closeIdleConnections()
        const cut = setTimeout(() => {
          httpServer.closeAllConnections()
          for (const socket of upgraded) socket.destroy()
        }, CLOSE_GRACE_MS)
        try {
          await registry.closeAll()
          await ioClosed.catch(() => {})
        } finally {
          clearTimeout(cut)
        }
        await webhooks.close()
        await cluster.close()
        await backend.close()
        audit.close()
      })()
      return closed
    }
  }
}

/** @typedef {Awaited<ReturnType<typeof createServer>>} TandemServer */
