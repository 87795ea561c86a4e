import client from 'prom-client'
import { CLOSE_REASONS } from '../../isomorphic/events.js'
import { compareIds } from '../storage/stream-ids.js'
import { closeForEditors, closeForHolders } from './editors.js'

// Control messages between a cluster's processes, as the adapter's server-side events; a document's
// writes go on its feed (storage/redis-doc-feed.js), never here; a lone process answers itself.

// How often the logs of documents with editors here are checked for writes the feed never announced
// (a lost message and no later one, a process killed between storing and publishing).
export const SWEEP_INTERVAL_MS = 5000

// Past the adapters' own deadlines, for a question that fails before it is sent, which the classic
// adapter never answers.
const ASK_DEADLINE_MS = 6000

const CLUSTER_EVENTS = Object.freeze({
  SESSION_DELETED: 'tandem:session-deleted',
  ACCESS_REVOKED: 'tandem:access-revoked',
  METRICS: 'tandem:metrics'
})

/**
 * @param {import('socket.io').Server} io @param {object} deps
 * @param {boolean} deps.enabled whether other processes share the adapter
 * @param {() => boolean} [deps.adapterReady] whether other processes can be asked
 * @param {import('../storage/redis-doc-feed.js').RedisDocFeed} [deps.feed] the backend's, when shared
 * @param {import('../storage/seats.js').Seats} deps.seats who holds a seat in which session, every process's
 * @param {import('../documents/doc-registry.js').DocRegistry} deps.registry
 * @param {import('../metrics.js').Metrics} deps.metrics @param {import('pino').Logger} deps.logger
 */
export function createCluster (io, { enabled, adapterReady = () => true, feed, seats, registry, metrics, logger }) {
  /** @param {import('../documents/live-doc.js').LiveDoc} doc */
  const catchUp = doc => doc.catchUp().catch(err => logger.debug({ err, doc: doc.id }, 'catch-up failed'))
  /** @type {NodeJS.Timeout | undefined} */
  let sweep

  if (feed) {
    feed.onMessage = (docId, message) => registry.get(docId)?.receive(message)
    // Messages published while the subscriber was away are lost: read every log held here.
    feed.onReconnected = () => {
      for (const doc of registry.loaded()) catchUp(doc)
    }
    sweep = setInterval(() => {
      sweepLogs().catch(err => logger.debug({ err }, 'sweep failed'))
    }, SWEEP_INTERVAL_MS).unref()
  }

  if (enabled) {
    io.on(CLUSTER_EVENTS.SESSION_DELETED, (/** @type {string} */ docId) => {
      closeForEditors(registry, docId, CLOSE_REASONS.DELETED)
      registry.discard(docId).catch(err => logger.warn({ err, doc: docId }, 'discard failed'))
    })
    io.on(CLUSTER_EVENTS.ACCESS_REVOKED, (/** @type {string} */ docId, /** @type {Revoked} */ revoked) => {
      closeForHolders(registry, docId, revoked)
    })
    io.on(CLUSTER_EVENTS.METRICS, async (/** @type {(metrics: unknown) => void} */ reply) => {
      if (typeof reply === 'function') reply(await metrics.registry.getMetricsAsJSON())
    })
  }

  /** One look-up of where every log stands (`newestEntries`), then a read of those past the copy. */
  async function sweepLogs () {
    const docs = [...registry.loaded()].filter(doc => doc.sockets.size > 0)
    if (docs.length === 0) return
    const newest = registry.store.newestEntries ? await registry.store.newestEntries(docs.map(doc => doc.id)) : docs.map(() => null)
    docs.forEach((doc, i) => {
      const entry = newest[i]
      if (entry === null || doc.position === null || compareIds(entry, doc.position) > 0) catchUp(doc)
    })
  }

  /**
   * Resolves with the answers that arrived (a process past the deadline is logged), or none at once
   * while Redis pub/sub is down. @param {string} event @param {...unknown} args @returns {Promise<any[]>}
   */
  function ask (event, ...args) {
    if (!enabled) return Promise.resolve([])
    // A question starts with PUBSUB on the publisher, which fails while it reconnects: the sharded
    // adapter then rejects, the classic one never calls back.
    if (!adapterReady()) {
      logger.debug({ event }, 'workers not asked: Redis pub/sub is disconnected')
      return Promise.resolve([])
    }
    return new Promise((resolve) => {
      const deadline = setTimeout(() => {
        logger.warn({ event }, 'no worker answered')
        resolve([])
      }, ASK_DEADLINE_MS).unref()
      /** @param {any[]} answers */
      const answered = (answers) => {
        clearTimeout(deadline)
        resolve(answers)
      }
      // Not io.serverSideEmit, which drops the sharded adapter's promise: a failed send would reject it
      // unhandled and end the process.
      const asked = io.of('/').adapter.serverSideEmit([event, ...args, (/** @type {Error | null} */ err, /** @type {any[]} */ answers) => {
        if (err) logger.warn({ err: err.message, event }, 'some workers did not answer')
        answered(answers ?? [])
      }])
      Promise.resolve(asked).catch((/** @type {Error} */ err) => {
        logger.warn({ err: err.message, event }, 'workers could not be asked')
        answered([])
      })
    })
  }

  return {
    seats,

    /**
     * Rejects at once while the subscriber is down. A joiner's state is read after this: an earlier
     * write is in the log, a later one arrives as a message. @param {string} docId
     */
    async docSubscribed (docId) {
      await feed?.subscribe(docId)
    },

    /** Closes a deleted session for its editors in every process. @param {string} docId */
    sessionDeleted (docId) {
      closeForEditors(registry, docId, CLOSE_REASONS.DELETED)
      if (enabled) io.serverSideEmit(CLUSTER_EVENTS.SESSION_DELETED, docId)
    },

    /**
     * Closes the document in every process for sockets that joined with a revoked token or user.
     * @param {string} docId @param {Revoked} revoked
     */
    accessRevoked (docId, revoked) {
      closeForHolders(registry, docId, revoked)
      if (enabled) io.serverSideEmit(CLUSTER_EVENTS.ACCESS_REVOKED, docId, revoked)
    },

    /** Editors per document across all processes. @param {string[]} docIds */
    editorCounts (docIds) {
      return seats.counts(docIds)
    },

    async close () {
      clearInterval(sweep)
      await seats.close()
    },

    /** The metrics of every process, each series labelled with its `worker`. */
    async metricsRegistry () {
      if (!enabled) return metrics.registry
      const all = [await metrics.registry.getMetricsAsJSON(), ...await ask(CLUSTER_EVENTS.METRICS)]
      return client.AggregatorRegistry.aggregate(all)
    }
  }
}

/** @typedef {ReturnType<typeof createCluster>} Cluster */
/** @typedef {import('./editors.js').Revoked} Revoked */
