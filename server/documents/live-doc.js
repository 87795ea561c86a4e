import * as Y from 'yjs'
import { AppError } from '../errors.js'
import { AwarenessStates } from './awareness-states.js'
import { STORE_BEHIND } from '../storage/doc-store.js'
import { compareIds } from '../storage/stream-ids.js'
import { checkStoredShape, hasPending } from './update-shape.js'

/** Received writes a copy holds before it applies them anyway. */
const MAX_RECEIVED = 32

/**
 * Clients that ever wrote to a document from which its editors' updates wait for the end of the
 * turn, to be applied in one transaction: every Yjs transaction costs time per client
 * (docs/PERFORMANCE.md, "One Yjs transaction per turn"). Below, an update is applied at once.
 */
const BATCHED_FROM_CLIENTS = 64

/** Origin of updates read back from the store, so nothing mistakes them for a client's. */
export const STORE_ORIGIN = Symbol('store')

/**
 * Where a loaded document is in its life. Every path that applies, writes, compacts or acknowledges
 * consults it (docs/ARCHITECTURE.md, "The life of a loaded document").
 * - loading: its stored updates are being read;
 * - live: it takes, applies, writes and compacts updates;
 * - closing: it takes nothing more; what it took is written (an unload then compacts it), unless it
 *   closes because it was distrusted, when what waits is refused;
 * - closed: its Y.Doc is destroyed.
 */
export const DOC_STATES = Object.freeze({ LOADING: 'loading', LIVE: 'live', CLOSING: 'closing', CLOSED: 'closed' })

/**
 * An update of an editor in this process, checked, on its way to being applied, relayed and stored.
 * @typedef {object} TakenUpdate
 * @property {Uint8Array} update
 * @property {import('socket.io').Socket} sender
 * @property {() => void} resolve once it is stored
 * @property {(err: unknown) => void} reject
 */

/**
 * A document held in memory while it has editors: the Y.Doc, its awareness, the sockets that joined
 * it, and the write queue that makes every acknowledged update durable. Updates are applied, sent to
 * the editors here, then written, group-committed (one append per batch). A compaction runs beside
 * the writes, on a snapshot of stored state only. In a shared store the copy follows the stored log
 * (`receive`, `catchUp`). A copy that holds what storage does not (a refused write, an update that
 * failed halfway) is distrusted: it closes, and `onUntrusted` has the registry reload the document.
 */
export class LiveDoc {
  /** @type {Set<import('socket.io').Socket>} */
  sockets = new Set()
  awareness = new AwarenessStates()
  /** @type {NodeJS.Timeout | undefined} */
  idleTimer
  /** @type {typeof DOC_STATES[keyof typeof DOC_STATES]} */
  state = DOC_STATES.LOADING
  /** @type {unknown} why it was distrusted, or null */
  distrustedBy = null
  /** @type {string | null} how far into a shared log the copy has read */
  position = null
  /** Stored size of the document (snapshot plus log), counting applied updates still being written. */
  bytes = 0
  /** @type {import('./update-check.js').Additions} what the updates taken this turn may add */
  takenAdditions = { structs: 0, clients: 0 }
  /** @type {{ update: Uint8Array, resolve: () => void, reject: (err: unknown) => void }[]} updates applied, waiting to be written */
  #queue = []
  /** @type {TakenUpdate[]} this process's editors' updates taken this turn, not applied yet */
  #taken = []
  /** @type {Promise<unknown>} tail of the chain that runs one write at a time */
  #tail = Promise.resolve()
  /** updates ever queued to be written, and ever written or refused: what a compaction waits on */
  #queuedCount = 0
  #writtenCount = 0
  /** @type {{ count: number, resolve: () => void }[]} */
  #writeWaiters = []
  #storedUpdates = 0
  /** @type {Promise<void> | null} */
  #reading = null
  #readAgain = false
  /** @type {Map<string, string>} this process's own writes in a shared log: position before → last entry */
  #ownSpans = new Map()
  /** @type {string | null} the newest entry of a shared log this copy has read or written */
  #newestKnown = null
  #ydoc = new Y.Doc()
  /** @type {Uint8Array[]} other processes' writes, sent to the editors here, not yet applied */
  #received = []
  /** @type {(() => Promise<void>) | null} the compaction waiting for its turn in the process's queue */
  #queuedCompaction = null
  /** @type {Promise<void>} settles when the last compaction queued has run, or was dropped */
  #compactionTurn = Promise.resolve()
  /** @type {Promise<void> | null} the compaction under way beside the writes */
  #compacting = null
  /** bytes of the snapshot this copy last compacted to; 0 until it has compacted */
  #snapshotBytes = 0

  /**
   * @param {string} id
   * @param {object} deps
   * @param {import('../storage/doc-store.js').DocStore} deps.store
   * @param {number} deps.compactAfterUpdates
   * @param {import('./compaction-queue.js').CompactionQueue} deps.compactions where the compactions
   *   this copy falls due for wait for their turn
   * @param {number} deps.maxDocBytes the stored size past which updates are refused
   * @param {number} deps.maxDocStructs the most structs (and content values) it may hold
   * @param {(doc: LiveDoc) => void} deps.onUntrusted called once, when the copy is distrusted
   * @param {(doc: LiveDoc, update: Uint8Array) => void} deps.onRemoteUpdate called with what another
   *   process stored that this copy lacked, to send to this process's editors
   * @param {(doc: LiveDoc, taken: TakenUpdate[]) => void} deps.onApplied called with this process's
   *   editors' updates once applied, to send to the other editors here
   * @param {import('pino').Logger} deps.logger
   * @param {import('../metrics.js').Metrics} deps.metrics
   */
  constructor (id, { store, compactAfterUpdates, compactions, maxDocBytes, maxDocStructs, onUntrusted, onRemoteUpdate, onApplied, logger, metrics }) {
    this.id = id
    this.store = store
    this.compactAfterUpdates = compactAfterUpdates
    this.compactions = compactions
    this.maxDocBytes = maxDocBytes
    this.maxDocStructs = maxDocStructs
    this.onUntrusted = onUntrusted
    this.onRemoteUpdate = onRemoteUpdate
    this.onApplied = onApplied
    this.logger = logger
    this.metrics = metrics
  }

  /**
   * Reads the stored document: loading → live, or closed (and the store's error, or TOO_LARGE past
   * the limits, or an Error when what is stored leaves anything pending: served, such a document
   * would show a text nobody wrote).
   * @returns {Promise<number>} how many stored updates it was read from
   */
  async load () {
    try {
      const stored = await this.store.load(this.id)
      checkStoredShape(stored.updates, this.maxDocStructs)
      // One transaction over the stored updates, far faster than merging them first.
      this.#apply(stored.updates)
      if (hasPending(this.#ydoc)) throw new Error('the stored updates build on structs storage does not hold')
      this.position = stored.position
      this.#storedUpdates = stored.updates.length
      this.bytes = byteSum(stored.updates)
    } catch (err) {
      this.#close()
      throw err
    }
    this.state = DOC_STATES.LIVE
    return this.#storedUpdates
  }

  get live () {
    return this.state === DOC_STATES.LIVE
  }

  /**
   * The document with everything applied: the writes received from other processes, and the updates
   * taken this turn.
   * @returns {Y.Doc}
   */
  get ydoc () {
    if (this.#received.length > 0) this.#apply(this.#received.splice(0))
    this.applyTaken()
    return this.#ydoc
  }

  /**
   * The document as applied so far: writes received from other processes, and updates taken this
   * turn, may still wait. An update is checked against this first (accept-update.js).
   * @returns {Y.Doc}
   */
  get appliedYdoc () {
    return this.#ydoc
  }

  /** Whether writes received from other processes wait to be applied. */
  get hasWaiting () {
    return this.#received.length > 0
  }

  /** Whether updates taken this turn, or writes received from other processes, wait to be applied. */
  get hasUnapplied () {
    return this.#received.length > 0 || this.#taken.length > 0
  }

  /**
   * Takes a checked update of an editor here: it is applied (in a document of many clients, at the
   * end of the turn, with the others taken in the turn, in one transaction), sent to the other
   * editors here (`onApplied`) and stored. Resolves once it is stored. Rejects UNAVAILABLE when the
   * copy is no longer live, INVALID_UPDATE if Yjs fails to apply it, with that failure if another
   * update of the turn fails, or with the store's error.
   * @param {Uint8Array} update checked against `appliedYdoc`
   * @param {import('socket.io').Socket} sender
   * @param {import('./update-check.js').Additions} additions what it may add (update-check.js)
   * @returns {Promise<void>}
   */
  take (update, sender, additions) {
    if (!this.live) return Promise.reject(this.#notLive())
    return new Promise((resolve, reject) => {
      this.#taken.push({ update, sender, resolve, reject })
      this.takenAdditions.structs += additions.structs
      this.takenAdditions.clients += additions.clients
      if (this.#taken.length > 1) return
      if (this.#ydoc.store.clients.size < BATCHED_FROM_CLIENTS) this.applyTaken()
      else setImmediate(this.#applyTakenLater)
    })
  }

  #applyTakenLater = () => this.applyTaken()

  /**
   * Applies the updates taken so far, sends them to the other editors here and queues their writes.
   * One that fails halfway, or leaves anything pending, distrusts the copy: it is refused as
   * INVALID_UPDATE, and the others of the turn with its error (retry).
   */
  applyTaken () {
    if (this.#taken.length === 0) return
    const taken = this.#taken.splice(0)
    this.takenAdditions.structs = 0
    this.takenAdditions.clients = 0
    if (!this.live) {
      for (const entry of taken) entry.reject(this.#notLive())
      return
    }
    let applying = 0
    try {
      Y.transact(this.#ydoc, () => {
        for (; applying < taken.length; applying++) {
          Y.applyUpdate(this.#ydoc, taken[applying].update, taken[applying].sender)
          // The check lets none through; one that did would be stored and pending for good.
          if (hasPending(this.#ydoc)) throw new Error('an update was left pending')
        }
      })
    } catch (err) {
      this.logger.warn({ err }, 'update failed to apply; reloading the document')
      taken.forEach((entry, i) => entry.reject(i === applying ? new AppError('INVALID_UPDATE', 'update could not be applied') : err))
      this.#distrust(err)
      return
    }
    try {
      this.onApplied(this, taken)
    } catch (err) {
      this.logger.error({ err }, 'sending updates to the editors here failed')
    }
    for (const entry of taken) this.#enqueue(entry)
  }

  /**
   * Queues an applied update's write: one write at a time, each taking all that waits.
   * @param {{ update: Uint8Array, resolve: () => void, reject: (err: unknown) => void }} entry
   */
  #enqueue (entry) {
    this.#queuedCount++
    this.#queue.push(entry)
    if (this.#queue.length === 1) this.#oneAtATime(() => this.#writeQueued())
  }

  /**
   * Brings the copy up to date with what other processes stored. Resolves after a read that started
   * after this call; concurrent calls share one read loop.
   * @returns {Promise<void>}
   */
  catchUp () {
    if (!this.store.shared || !this.live) return Promise.resolve()
    this.#readAgain = true
    this.#reading ??= this.#readLoop().finally(() => { this.#reading = null })
    return this.#reading
  }

  /** Compacts the stored log into one snapshot now, after the writes queued so far. */
  compact () {
    this.applyTaken()
    return this.#oneAtATime(async () => {
      await this.#compacting
      if (this.live && this.#storedUpdates > 1) await this.#compactStored({ exclusive: true })
    })
  }

  /** Resolves once every update taken so far, and the compaction they made due, has been attempted. */
  async settled () {
    this.applyTaken()
    await this.#oneAtATime(async () => {})
    await this.#compactionTurn
    await this.#compacting
  }

  /**
   * live → closing → closed. Takes nothing more; resolves once what it took has been written (or
   * refused, when distrusted) and the compaction under way has ended, then compacts if asked. A
   * compaction still waiting for its turn is dropped: a close never waits on other documents'.
   * @param {{ compact: boolean }} options
   */
  async close ({ compact }) {
    if (this.state === DOC_STATES.CLOSED) return
    this.applyTaken()
    if (this.live) this.state = DOC_STATES.CLOSING
    this.#dropQueuedCompaction()
    try {
      await this.#oneAtATime(async () => {
        await this.#compacting
        if (compact && this.distrustedBy === null && this.#storedUpdates > 1) await this.#compactStored({ exclusive: true })
      })
    } finally {
      this.#close()
    }
  }

  /**
   * A write another process published: applied when it follows on from `position`, else the log is
   * read from there (a message was missed, or this one was read already).
   * @param {import('../storage/redis-doc-feed.js').FeedMessage} message
   */
  receive ({ prev, last, updates }) {
    if (!this.live || compareIds(last, /** @type {string} */ (this.position)) <= 0) return
    if (prev !== this.position || this.#reading) {
      this.catchUp().catch(err => this.logger.debug({ err }, 'catch-up after a missed message failed'))
      return
    }
    // Following on from `position`, the message holds only what the copy lacks: its updates go to
    // the editors as they are, not re-encoded.
    this.#received.push(...updates)
    this.bytes += byteSum(updates)
    for (const update of updates) this.onRemoteUpdate(this, update)
    this.#advance(last)
    // A process whose editors only watch applies them now and then, so they do not pile up.
    if (this.#received.length >= MAX_RECEIVED) this.#apply(this.#received.splice(0))
  }

  async #readLoop () {
    while (this.#readAgain && this.live) {
      this.#readAgain = false
      const { updates, position } = await this.store.readSince(this.id, this.position)
      if (!this.live) return
      this.#integrate(updates)
      this.#advance(position)
    }
  }

  /**
   * Applies stored updates as one transaction; what they held that the copy lacked goes to the
   * editors in this process. A log that leaves anything pending distrusts the copy.
   * @param {Uint8Array[]} updates
   */
  #integrate (updates) {
    if (updates.length === 0) return
    /** @type {Uint8Array | null} */
    let news = null
    const capture = (/** @type {Uint8Array} */ update) => { news = update }
    // Through the getter: what was received already is applied first, so it is not sent again.
    this.ydoc.on('update', capture)
    try {
      this.#apply(updates)
      this.bytes += byteSum(updates)
    } finally {
      this.#ydoc.off('update', capture)
    }
    if (hasPending(this.#ydoc)) {
      this.#distrust(new Error('the stored log builds on structs storage does not hold'))
      return
    }
    if (news) this.onRemoteUpdate(this, news)
  }

  /** @param {Uint8Array[]} updates stored ones, applied as one transaction */
  #apply (updates) {
    Y.transact(this.#ydoc, () => {
      for (const update of updates) Y.applyUpdate(this.#ydoc, update, STORE_ORIGIN)
    }, STORE_ORIGIN)
  }

  /**
   * Moves `position` forward (never back: a message may have moved it past what a read returns),
   * then past this process's own writes that follow on from it, which the copy already holds.
   * @param {string | null} position
   */
  #advance (position) {
    if (position === null || (this.position !== null && compareIds(position, this.position) <= 0)) return
    this.position = position
    let next
    while ((next = this.#ownSpans.get(this.position)) !== undefined) {
      this.#ownSpans.delete(this.position)
      this.position = next
    }
    for (const prev of this.#ownSpans.keys()) {
      if (compareIds(prev, this.position) < 0) this.#ownSpans.delete(prev)
    }
  }

  /**
   * The copy holds what storage may not: live or closing → closing, distrusted. What waits to be
   * written is refused (it may build on what storage refused), and the registry reloads the document.
   * @param {unknown} err
   */
  #distrust (err) {
    if (this.distrustedBy !== null || this.state === DOC_STATES.CLOSED) return
    this.distrustedBy = err
    this.state = DOC_STATES.CLOSING
    this.#dropQueuedCompaction()
    this.#refuseQueued(err)
    this.onUntrusted(this)
  }

  /** closed: nothing is held any more. */
  #close () {
    this.state = DOC_STATES.CLOSED
    this.#dropQueuedCompaction()
    this.#refuseQueued(this.#notLive())
    this.#ydoc.destroy()
  }

  /** @param {unknown} err */
  #refuseQueued (err) {
    const refused = this.#queue.splice(0)
    for (const entry of refused) entry.reject(err)
    this.#written(refused.length)
  }

  /** @param {number} count updates just written or refused */
  #written (count) {
    this.#writtenCount += count
    if (this.#writeWaiters.length === 0) return
    const waiting = this.#writeWaiters
    this.#writeWaiters = []
    for (const waiter of waiting) {
      if (waiter.count <= this.#writtenCount || this.state === DOC_STATES.CLOSED) waiter.resolve()
      else this.#writeWaiters.push(waiter)
    }
  }

  /**
   * Resolves once the first `count` updates ever queued have been written or refused.
   * @param {number} count
   * @returns {Promise<void>}
   */
  #writtenUpTo (count) {
    if (this.#writtenCount >= count || this.state === DOC_STATES.CLOSED) return Promise.resolve()
    return new Promise(resolve => this.#writeWaiters.push({ count, resolve }))
  }

  #notLive () {
    return new AppError('UNAVAILABLE', `document ${this.id} is ${this.state}; retry`)
  }

  async #writeQueued () {
    const batch = this.#queue.splice(0)
    if (batch.length === 0) return
    let stored
    try {
      stored = await this.store.append(this.id, batch.map(entry => entry.update), this.#known())
    } catch (err) {
      if (isBehind(err) && await this.#writeBack()) {
        for (const entry of batch) entry.resolve()
        this.#written(batch.length)
        return
      }
      for (const entry of batch) entry.reject(err)
      this.#written(batch.length)
      // Updates queued meanwhile build on the refused ones: they are refused too.
      this.#distrust(err)
      return
    }
    this.#storedUpdates = stored.logLength ?? this.#storedUpdates + batch.length
    if (stored.span) this.#stored(stored.span)
    for (const entry of batch) entry.resolve()
    this.#written(batch.length)
    if (this.live && this.#compactionDue() && !this.#compacting && !this.#queuedCompaction) this.#queueCompaction()
  }

  /** Waits for the process's compaction queue; the updates are durable in the log meanwhile. */
  #queueCompaction () {
    const turn = async () => {
      this.#queuedCompaction = null
      if (!this.live) return
      this.#compacting = this.#compactStored({ exclusive: false })
        .catch(err => this.logger.warn({ err }, 'compaction failed'))
        .finally(() => { this.#compacting = null })
      await this.#compacting
    }
    this.#queuedCompaction = turn
    this.#compactionTurn = this.compactions.run(turn).catch(err => this.logger.warn({ err }, 'compaction failed'))
  }

  #dropQueuedCompaction () {
    if (this.#queuedCompaction) this.compactions.cancel(this.#queuedCompaction)
    this.#queuedCompaction = null
  }

  /** The newest entry this copy knows a shared log holds. */
  #known () {
    if (this.position === null) return this.#newestKnown
    if (this.#newestKnown === null || compareIds(this.position, this.#newestKnown) > 0) return this.position
    return this.#newestKnown
  }

  /**
   * The shared log holds less than this copy read or wrote (Redis restarted on older data, or none):
   * what was acknowledged since is only in the copies. This one holds all of it (and the batch just
   * refused): it is written back whole, as one update, before anything else, and the copy goes on
   * from there. False if that write fails too.
   */
  async #writeBack () {
    this.logger.error({ doc: this.id, known: this.#known() }, 'storage holds less of the document than was acknowledged; writing it back from memory')
    let stored
    try {
      stored = await this.store.append(this.id, [Y.encodeStateAsUpdate(this.#ydoc)], null)
    } catch (err) {
      this.logger.error({ err, doc: this.id }, 'writing the document back failed')
      return false
    }
    this.#storedUpdates = stored.logLength ?? this.#storedUpdates + 1
    if (stored.span) {
      // The log now holds all the copy does, whatever was read or written before.
      this.#ownSpans.clear()
      this.position = stored.span.last
      this.#newestKnown = stored.span.last
    }
    return true
  }

  /**
   * Moves past a write to the shared log (which the store published to other processes) if it
   * follows on from `position`; else it is passed once the entries before it have been read.
   * @param {{ prev: string, last: string }} span
   */
  #stored ({ prev, last }) {
    if (this.#newestKnown === null || compareIds(last, this.#newestKnown) > 0) this.#newestKnown = last
    if (prev === this.position) {
      this.#advance(last)
    } else {
      this.#ownSpans.set(prev, last)
    }
  }

  /**
   * Whether the log has grown enough to be compacted: `compactAfterUpdates` updates, and at least as
   * many bytes as the last snapshot, so that each compaction, which encodes the whole document, is
   * paid for by a document's size of new writes. Past half of `maxDocBytes` the count alone decides:
   * the size limit counts the log too.
   */
  #compactionDue () {
    if (this.#storedUpdates < this.compactAfterUpdates) return false
    return this.bytes - this.#snapshotBytes >= this.#snapshotBytes || this.bytes > this.maxDocBytes / 2
  }

  /**
   * Replaces the stored log with a snapshot of stored state only. The store asks for the snapshot
   * once it knows what the snapshot must cover; it is encoded then, and handed over only once every
   * update it holds has been written: one of them refused (the copy is then distrusted) drops it.
   * Beside the writes, it waits for them; in their line (`exclusive`), it writes what is queued.
   * @param {{ exclusive: boolean }} options
   */
  async #compactStored ({ exclusive }) {
    if (this.distrustedBy !== null) return
    const covered = this.#storedUpdates
    let snapshotBytes = 0
    let bytesAtSnapshot = 0
    const compacted = await this.store.compact(this.id, async () => {
      await this.catchUp()
      const snapshot = Y.encodeStateAsUpdate(this.ydoc)
      // The snapshot may also hold updates past `position` (this process's own, not read back yet);
      // they stay in the log too, and applying a Yjs update twice is a no-op.
      const position = this.position
      const holds = this.#queuedCount
      bytesAtSnapshot = this.bytes
      snapshotBytes = snapshot.byteLength
      if (exclusive && this.#queue.length > 0) await this.#writeQueued()
      await this.#writtenUpTo(holds)
      if (this.distrustedBy !== null) throw new AppError('UNAVAILABLE', 'the snapshot would hold an update storage refused')
      return { snapshot, position }
    })
    this.bytes = snapshotBytes + this.bytes - bytesAtSnapshot
    this.#snapshotBytes = snapshotBytes
    // Appends stored meanwhile stay in the log.
    this.#storedUpdates = Math.max(1, this.#storedUpdates - covered + 1)
    if (compacted) this.metrics.compactions.inc()
  }

  /**
   * Runs writes (and a compaction asked for now) one at a time, in the order asked.
   * @template T
   * @param {() => Promise<T>} step
   * @returns {Promise<T>}
   */
  #oneAtATime (step) {
    const run = this.#tail.then(step)
    this.#tail = run.catch(() => {})
    return run
  }
}

/** @param {unknown} err */
function isBehind (err) {
  const cause = /** @type {{ cause?: { code?: unknown } } | null} */ (err)?.cause
  return cause?.code === STORE_BEHIND
}

/** @param {Uint8Array[]} updates */
function byteSum (updates) {
  let sum = 0
  for (const update of updates) sum += update.byteLength
  return sum
}
