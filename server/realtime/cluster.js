import client from 'prom-client'
import { CLOSE_REASONS } from '../protocol.js'
import { closeForEditors, closeForHolders } from './editors.js'
import { roomOf } from './room-relay.js'

// What the processes of a cluster tell each other. They go through the Socket.IO adapter's
// server-side events, which relay small control messages; document contents never travel this way
// (they live in the store). In a single process every call here is answered locally.

/** Delay, and so the longest a worker's copy of a busy document lags behind the stream, in ms. */
const NOTIFY_INTERVAL_MS = 50

const CLUSTER_EVENTS = Object.freeze({
  DOC_STORED: 'tandem:doc-stored',
  SESSION_DELETED: 'tandem:session-deleted',
  ACCESS_REVOKED: 'tandem:access-revoked',
  EDITOR_COUNTS: 'tandem:editor-counts',
  METRICS: 'tandem:metrics'
})

/**
 * @param {import('socket.io').Server} io
 * @param {object} deps
 * @param {boolean} deps.enabled whether other processes share the adapter
 * @param {(room: string) => Promise<void>} deps.roomSubscribed the backend's (see storage/backend.js)
 * @param {import('../docs/doc-registry.js').DocRegistry} deps.registry
 * @param {import('../metrics.js').Metrics} deps.metrics
 * @param {import('pino').Logger} deps.logger
 */
export function createCluster (io, { enabled, roomSubscribed, registry, metrics, logger }) {
  /** @type {Set<string>} documents with a doc-stored notice waiting to go out */
  const notifying = new Set()
  /** @param {string[]} docIds */
  const localCounts = docIds => docIds.map(id => registry.editorCount(id))

  if (enabled) {
    io.on(CLUSTER_EVENTS.DOC_STORED, (/** @type {string} */ docId) => {
      // Another process stored an update: keep our copy current while we hold the document.
      registry.get(docId)?.catchUp().catch(err => logger.debug({ err, doc: docId }, 'catch-up failed'))
    })
    io.on(CLUSTER_EVENTS.SESSION_DELETED, (/** @type {string} */ docId) => {
      closeForEditors(registry, docId, CLOSE_REASONS.DELETED)
      registry.discard(docId).catch(err => logger.warn({ err, doc: docId }, 'discard failed'))
    })
    io.on(CLUSTER_EVENTS.ACCESS_REVOKED, (/** @type {string} */ docId, /** @type {Revoked} */ revoked) => {
      closeForHolders(registry, docId, revoked)
    })
    io.on(CLUSTER_EVENTS.EDITOR_COUNTS, (/** @type {string[]} */ docIds, /** @type {(counts: number[]) => void} */ reply) => {
      if (Array.isArray(docIds) && typeof reply === 'function') reply(localCounts(docIds))
    })
    io.on(CLUSTER_EVENTS.METRICS, async (/** @type {(metrics: unknown) => void} */ reply) => {
      if (typeof reply === 'function') reply(await metrics.registry.getMetricsAsJSON())
    })
  }

  /**
   * Asks every other process; resolves with the answers that arrived, all of them unless some
   * process missed the adapter's deadline (5 s), which is logged.
   * @param {string} event
   * @param {...unknown} args
   * @returns {Promise<any[]>}
   */
  function ask (event, ...args) {
    if (!enabled) return Promise.resolve([])
    return new Promise((resolve) => {
      io.serverSideEmit(event, ...args, (/** @type {Error | null} */ err, /** @type {any[]} */ answers) => {
        if (err) logger.warn({ err: err.message, event }, 'some workers did not answer')
        resolve(answers ?? [])
      })
    })
  }

  return {
    /**
     * Resolves once what other processes broadcast to a document's room reaches this process. A
     * joiner's state is read after this: an update broadcast earlier is already stored (see the
     * update handler), one broadcast later reaches the joiner.
     * @param {string} docId
     */
    roomSubscribed (docId) {
      return roomSubscribed(roomOf(docId))
    },

    /**
     * Tells the other processes that a document has new stored updates, at most once per
     * NOTIFY_INTERVAL_MS per document: a busy document would otherwise cost every worker a stream
     * read per write. Joins never depend on it; they read the stream themselves.
     * @param {string} docId
     */
    docStored (docId) {
      if (!enabled || notifying.has(docId)) return
      notifying.add(docId)
      setTimeout(() => {
        notifying.delete(docId)
        io.serverSideEmit(CLUSTER_EVENTS.DOC_STORED, docId)
      }, NOTIFY_INTERVAL_MS).unref()
    },

    /** Closes a deleted session for its editors in every process. @param {string} docId */
    sessionDeleted (docId) {
      closeForEditors(registry, docId, CLOSE_REASONS.DELETED)
      if (enabled) io.serverSideEmit(CLUSTER_EVENTS.SESSION_DELETED, docId)
    },

    /**
     * Closes the document, in every process, for the sockets that joined it with a revoked token
     * (or any token of a revoked user).
     * @param {string} docId
     * @param {Revoked} revoked
     */
    accessRevoked (docId, revoked) {
      closeForHolders(registry, docId, revoked)
      if (enabled) io.serverSideEmit(CLUSTER_EVENTS.ACCESS_REVOKED, docId, revoked)
    },

    /**
     * Live editors per document across all processes (those that answered in time).
     * @param {string[]} docIds
     * @returns {Promise<number[]>}
     */
    async editorCounts (docIds) {
      const counts = localCounts(docIds)
      for (const answer of await ask(CLUSTER_EVENTS.EDITOR_COUNTS, docIds)) {
        if (Array.isArray(answer)) answer.forEach((count, i) => { counts[i] += Number(count) || 0 })
      }
      return counts
    },

    /** Prometheus text of every process, each series labelled with its `worker`. */
    async metricsText () {
      if (!enabled) return metrics.registry.metrics()
      const all = [await metrics.registry.getMetricsAsJSON(), ...await ask(CLUSTER_EVENTS.METRICS)]
      return client.AggregatorRegistry.aggregate(all).metrics()
    }
  }
}

/** @typedef {ReturnType<typeof createCluster>} Cluster */
/** @typedef {import('./editors.js').Revoked} Revoked */
