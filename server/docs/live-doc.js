import * as Y from 'yjs'
import { AwarenessStates } from './awareness-states.js'

/**
 * A document held in memory while it has editors: the Y.Doc, its awareness, the sockets that joined
 * it, and the write queue that makes every acknowledged update durable.
 *
 * Writes are group-committed: updates that arrive while a write is in flight are stored together in
 * the next one, so a busy document costs one storage round trip per batch rather than per update.
 * Appends and compactions run one at a time, which is the ordering the DocStore contract asks for.
 */
export class LiveDoc {
  /** @type {Set<import('socket.io').Socket>} */
  sockets = new Set()
  awareness = new AwarenessStates()
  /** @type {NodeJS.Timeout | undefined} */
  idleTimer
  /** @type {{ update: Uint8Array, resolve: () => void, reject: (err: unknown) => void }[]} */
  #queue = []
  /** @type {Promise<unknown>} tail of the chain that serialises store operations */
  #tail = Promise.resolve()
  #storedUpdates

  /**
   * @param {string} id
   * @param {Y.Doc} ydoc
   * @param {object} deps
   * @param {import('./doc-store.js').DocStore} deps.store
   * @param {number} deps.storedUpdates entries the store holds for this document now
   * @param {number} deps.compactAfterUpdates
   * @param {import('pino').Logger} deps.logger
   * @param {import('../metrics.js').Metrics} deps.metrics
   */
  constructor (id, ydoc, { store, storedUpdates, compactAfterUpdates, logger, metrics }) {
    this.id = id
    this.ydoc = ydoc
    this.store = store
    this.#storedUpdates = storedUpdates
    this.compactAfterUpdates = compactAfterUpdates
    this.logger = logger
    this.metrics = metrics
  }

  /**
   * Stores an update that has been applied to `ydoc`; resolves once it is durable.
   * @param {Uint8Array} update
   * @returns {Promise<void>}
   */
  persist (update) {
    return new Promise((resolve, reject) => {
      this.#queue.push({ update, resolve, reject })
      if (this.#queue.length === 1) this.#exclusive(() => this.#writeQueued())
    })
  }

  /** Compacts the stored log into one snapshot once every pending write has landed. */
  flush () {
    return this.#exclusive(async () => {
      if (this.#storedUpdates > 1) await this.#compact()
    })
  }

  /** Resolves once every write queued so far has been attempted. */
  settled () {
    return this.#exclusive(async () => {})
  }

  async #writeQueued () {
    const batch = this.#queue.splice(0)
    try {
      await this.store.append(this.id, batch.map(entry => entry.update))
    } catch (err) {
      for (const entry of batch) entry.reject(err)
      return
    }
    this.#storedUpdates += batch.length
    for (const entry of batch) entry.resolve()
    if (this.#storedUpdates >= this.compactAfterUpdates) {
      // The updates are already durable in the log; a failed compaction only postpones the next one.
      await this.#compact().catch(err => this.logger.warn({ err }, 'compaction failed'))
    }
  }

  async #compact () {
    // The snapshot may include updates still queued behind this step; storing them again after it is
    // harmless, since applying a Yjs update twice is a no-op.
    await this.store.compact(this.id, Y.encodeStateAsUpdate(this.ydoc))
    this.#storedUpdates = 1
    this.metrics.compactions.inc()
  }

  /**
   * @template T
   * @param {() => Promise<T>} step
   * @returns {Promise<T>}
   */
  #exclusive (step) {
    const run = this.#tail.then(step)
    this.#tail = run.catch(() => {})
    return run
  }
}
