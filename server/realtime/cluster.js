import client from 'prom-client'
import { CLOSE_REASONS } from '../../isomorphic/events.js'
import { compareIds } from '../storage/stream-ids.js'
import { closeForEditors, closeForHolders } from './editors.js'

// What the processes of a cluster tell each other. Control messages go through the Socket.IO
// adapter's server-side events; document contents never travel that way: they live in the store,
// and each write is announced on the document's own feed (docs/redis-doc-feed.js). In a single
// process every call here is answered locally.

/**
 * How often a process looks at where the log of each document its editors hold stands, and reads
 * those that moved past its copy, in ms: a write whose feed message was lost and that no later
 * message reveals (the last keystroke before a pause, a process killed between storing and
 * publishing) reaches them within this.
 */
const SWEEP_INTERVAL_MS = 5000

/**
 * The longest a question to the other processes waits, in ms: past the adapters' own deadlines
 * (5 s sharded, 2 s classic), for a question that fails before it is sent, which the classic
 * adapter never answers.
 */
const ASK_DEADLINE_MS = 6000

const CLUSTER_EVENTS = Object.freeze({
  SESSION_DELETED: 'tandem:session-deleted',
  ACCESS_REVOKED: 'tandem:access-revoked',
  METRICS: 'tandem:metrics'
})

/**
 * @param {import('socket.io').Server} io
 * @param {object} deps
 * @param {boolean} deps.enabled whether other processes share the adapter
 * @param {() => boolean} [deps.adapterReady] whether the adapter's Redis connections are up, so the
 *   other processes can be asked
 * @param {import('../storage/redis-doc-feed.js').RedisDocFeed} [deps.feed] the backend's, when shared
 * @param {import('../storage/seats.js').Seats} deps.seats who holds a seat in which session, every process's
 * @param {import('../documents/doc-registry.js').DocRegistry} deps.registry
 * @param {import('../metrics.js').Metrics} deps.metrics
 * @param {import('pino').Logger} deps.logger
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

  /**
   * Reads the log of every document with editors here whose log has moved past the copy: one
   * look-up of where every log stands (the store's `newestEntries`), then a read of only those,
   * where each sweep read every log.
   */
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
   * Asks every other process; resolves with the answers that arrived, all of them unless some
   * process missed the adapter's deadline, which is logged. While Redis pub/sub is down no process
   * can be asked, and it resolves at once with none.
   * @param {string} event
   * @param {...unknown} args
   * @returns {Promise<any[]>}
   */
  function ask (event, ...args) {
    if (!enabled) return Promise.resolve([])
    // A question starts with a count of the processes (PUBSUB on the publisher), which fails at
    // once while the publisher reconnects: the sharded adapter then rejects, the classic one never
    // calls back.
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
      // Through the adapter, not io.serverSideEmit, which drops the promise the sharded adapter
      // returns: a question that could not be sent would reject it unhandled and end the process.
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
     * Resolves once the writes other processes publish for a document reach this process; rejects
     * at once while the subscriber is disconnected. A joiner's state is read after this: a write
     * stored earlier is in the log, one stored later arrives as a message.
     * @param {string} docId
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
     * Editors per document across all processes.
     * @param {string[]} docIds
     * @returns {Promise<number[]>}
     */
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
