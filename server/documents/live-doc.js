import * as Y from 'yjs'
import { AppError } from '../errors.js'
import { AwarenessStates } from './awareness-states.js'
import { STORE_BEHIND } from '../storage/doc-store.js'
import { compareIds } from '../storage/stream-ids.js'
import { checkStoredShape, hasPending } from './update-shape.js'

/** History keeps an author's name to this many characters: a token's user or an awareness name is bounded elsewhere, but not below the record's 16-bit length. */
const MAX_AUTHOR_LENGTH = 200

/** Received writes held before they are applied anyway. */
const MAX_RECEIVED = 32

/** From this many clients on, a turn's updates share one transaction (docs/PERFORMANCE.md, "One Yjs transaction per turn"). */
const BATCHED_FROM_CLIENTS = 64

/** Origin of updates read back from the store, so nothing mistakes them for a client's. */
export const STORE_ORIGIN = Symbol('store')

/** A loaded document's lifecycle (docs/ARCHITECTURE.md, "The life of a loaded document"). */
export const DOC_STATES = Object.freeze({ LOADING: 'loading', LIVE: 'live', CLOSING: 'closing', CLOSED: 'closed' })

/**
 * Who an update comes from: an editor of this process (`sender`, which has it already), or an edit
 * made on the server for the REST API (`author`: the API key or a join token's user).
 * @typedef {{ sender?: import('socket.io').Socket, author?: Author }} UpdateSource
 * @typedef {{ kind: 'api-key' } | { kind: 'token', user: string }} Author
 */

/** @typedef {{ update: Uint8Array, sender?: import('socket.io').Socket, author?: Author, resolve: () => void, reject: (err: unknown) => void }} TakenUpdate */

/**
 * What keeping a document's history takes (absent: none is kept).
 * @typedef {object} DocHistory
 * @property {() => number} now the server clock, in ms
 * @property {(doc: LiveDoc, sender: import('socket.io').Socket) => string | null} authorOf who sent an update
 * @property {(docId: string) => Promise<void>} compact the history's compaction, run after the document's
 * @property {(docId: string, updates: Uint8Array[], at: number) => void} loaded what a load read, as it
 *   stood at `at` or later: history starts there if it holds nothing of the document yet
 */

/**
 * A document in memory while it has editors: Y.Doc, awareness, sockets, write queue. Updates are
 * applied, relayed, then group-committed; compactions run beside the writes on stored state only.
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
  /** Stored size (snapshot plus log), counting applied updates still being written. */
  bytes = 0
  /** @type {import('./update-check.js').Additions} what the updates taken this turn may add */
  takenAdditions = { structs: 0, clients: 0 }
  /** @type {{ update: Uint8Array, by: string | null, resolve: () => void, reject: (err: unknown) => void }[]} updates applied, waiting to be written */
  #queue = []
  /** @type {TakenUpdate[]} updates taken here this turn (editors', server edits), not applied yet */
  #taken = []
  /** @type {Promise<unknown>} tail of the chain that runs one write at a time */
  #tail = Promise.resolve()
  /** updates ever queued, and ever written or refused: what a compaction waits on */
  #queuedCount = 0
  #writtenCount = 0
  /** @type {{ count: number, resolve: () => void }[]} */
  #writeWaiters = []
  #storedUpdates = 0
  /** @type {Promise<void> | null} */
  #reading = null
  #readAgain = false
  /** @type {Map<string, string>} this process's writes to a shared log: position before → last entry */
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
  #snapshotBytes = 0
  /** when the last write kept in history was stored, ms */
  #lastStoredAt = 0

  /**
   * @param {string} id @param {object} deps
   * @param {import('../storage/doc-store.js').DocStore} deps.store @param {number} deps.compactAfterUpdates
   * @param {import('./compaction-queue.js').CompactionQueue} deps.compactions
   * @param {number} deps.maxDocBytes @param {number} deps.maxDocStructs
   * @param {(doc: LiveDoc) => void} deps.onUntrusted called once, when the copy is distrusted
   * @param {(doc: LiveDoc, update: Uint8Array) => void} deps.onRemoteUpdate what another process stored that this copy lacked
   * @param {(doc: LiveDoc, taken: TakenUpdate[]) => void} deps.onApplied the updates taken here, once applied
   * @param {import('pino').Logger} deps.logger @param {import('../metrics.js').Metrics} deps.metrics
   * @param {DocHistory | null} [deps.history]
   */
  constructor (id, { store, compactAfterUpdates, compactions, maxDocBytes, maxDocStructs, onUntrusted, onRemoteUpdate, onApplied, logger, metrics, history = null }) {
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
    this.history = history
  }

  /**
   * loading → live, or closed with the store's error, TOO_LARGE, or an Error when what is stored
   * leaves structs pending (served, it would show a text nobody wrote). Resolves to how many it read.
   */
  async load () {
    // Before the read: an update stored after it has a later time than this.
    const readAt = this.history?.now()
    try {
      const stored = await this.store.load(this.id)
      checkStoredShape(stored.updates, this.maxDocStructs)
      this.#apply(stored.updates)
      if (hasPending(this.#ydoc)) throw new Error('the stored updates build on structs storage does not hold')
      this.position = stored.position
      this.#storedUpdates = stored.updates.length
      this.bytes = byteSum(stored.updates)
      if (readAt !== undefined && stored.updates.length > 0) this.history?.loaded(this.id, stored.updates, readAt)
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

  /** @returns {Y.Doc} with received writes and this turn's taken updates applied */
  get ydoc () {
    if (this.#received.length > 0) this.#apply(this.#received.splice(0))
    this.applyTaken()
    return this.#ydoc
  }

  /** @returns {Y.Doc} as applied so far; an update is checked against this first (accept-update.js) */
  get appliedYdoc () {
    return this.#ydoc
  }

  /** Whether received writes are not applied yet. */
  get hasWaiting () {
    return this.#received.length > 0
  }

  get hasUnapplied () {
    return this.#received.length > 0 || this.#taken.length > 0
  }

  /**
   * Resolves once stored. Rejects UNAVAILABLE when not live, INVALID_UPDATE if Yjs fails on it, the
   * failure of another update of its turn, or the store's error.
   * @param {Uint8Array} update checked against `appliedYdoc`
   * @param {UpdateSource} from @param {import('./update-check.js').Additions} additions
   * @returns {Promise<void>}
   */
  take (update, { sender, author }, additions) {
    if (!this.live) return Promise.reject(this.#notLive())
    return new Promise((resolve, reject) => {
      this.#taken.push({ update, sender, author, resolve, reject })
      this.takenAdditions.structs += additions.structs
      this.takenAdditions.clients += additions.clients
      if (this.#taken.length > 1) return
      if (this.#ydoc.store.clients.size < BATCHED_FROM_CLIENTS) this.applyTaken()
      else setImmediate(this.#applyTakenLater)
    })
  }

  #applyTakenLater = () => this.applyTaken()

  /**
   * One transaction; an update that fails halfway or leaves structs pending distrusts the copy (it is
   * INVALID_UPDATE, the rest of the turn retry).
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
          // The check lets none through; one that did would stay pending in storage for good.
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

  /** Group commit: one write at a time, each taking all queued meanwhile. @param {TakenUpdate} entry */
  #enqueue ({ update, sender, author, resolve, reject }) {
    this.#queuedCount++
    this.#queue.push({ update, by: this.#authorOf(sender, author), resolve, reject })
    if (this.#queue.length === 1) this.#oneAtATime(() => this.#writeQueued())
  }

  /** Reads what other processes stored; resolves after a read that started after this call. */
  catchUp () {
    if (!this.store.shared || !this.live) return Promise.resolve()
    this.#readAgain = true
    this.#reading ??= this.#readLoop().finally(() => { this.#reading = null })
    return this.#reading
  }

  compact () {
    this.applyTaken()
    return this.#oneAtATime(async () => {
      await this.#compacting
      if (this.live && this.#storedUpdates > 1) await this.#compactStored({ exclusive: true })
    })
  }

  /** Once every update taken so far, and the compaction it made due, has been attempted. */
  async settled () {
    this.applyTaken()
    await this.#oneAtATime(async () => {})
    await this.#compactionTurn
    await this.#compacting
  }

  /**
   * Once what it took is written (or refused), then compacts if asked. A queued compaction is dropped:
   * a close never waits behind other documents'. @param {{ compact: boolean }} options
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
        if (compact) await this.#compactHistory()
      })
    } finally {
      this.#close()
    }
  }

  /**
   * Kept when it follows on from `position`; else a message was missed and the log is read.
   * @param {import('../storage/redis-doc-feed.js').FeedMessage} message
   */
  receive ({ prev, last, updates }) {
    if (!this.live || compareIds(last, /** @type {string} */ (this.position)) <= 0) return
    if (prev !== this.position || this.#reading) {
      this.catchUp().catch(err => this.logger.debug({ err }, 'catch-up after a missed message failed'))
      return
    }
    // It holds only what the copy lacks, so its updates are relayed as they are.
    this.#received.push(...updates)
    this.bytes += byteSum(updates)
    for (const update of updates) this.onRemoteUpdate(this, update)
    this.#advance(last)
    // Editors that only watch never read the Y.Doc: apply now and then so they do not pile up.
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

  /** A log that leaves structs pending distrusts the copy. @param {Uint8Array[]} updates */
  #integrate (updates) {
    if (updates.length === 0) return
    /** @type {Uint8Array | null} */
    let news = null
    const capture = (/** @type {Uint8Array} */ update) => { news = update }
    // Through the getter: received writes are applied first, so they are not relayed twice.
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
   * Never back (a message may be ahead of a read), then past this process's writes that follow on.
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

  /** Queued writes are refused: they may build on what storage refused. @param {unknown} err */
  #distrust (err) {
    if (this.distrustedBy !== null || this.state === DOC_STATES.CLOSED) return
    this.distrustedBy = err
    this.state = DOC_STATES.CLOSING
    this.#dropQueuedCompaction()
    this.#refuseQueued(err)
    this.onUntrusted(this)
  }

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

  /** Once the first `count` updates ever queued are written or refused. @param {number} count @returns {Promise<void>} */
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
      const history = this.history ? { at: this.#storedAt(), by: batch.map(entry => entry.by) } : undefined
      stored = await this.store.append(this.id, batch.map(entry => entry.update), this.#known(), history)
    } catch (err) {
      if (isBehind(err) && await this.#writeBack()) {
        for (const entry of batch) entry.resolve()
        this.#written(batch.length)
        return
      }
      for (const entry of batch) entry.reject(err)
      this.#written(batch.length)
      // Updates queued meanwhile build on the refused ones.
      this.#distrust(err)
      return
    }
    this.#storedUpdates = stored.logLength ?? this.#storedUpdates + batch.length
    if (stored.span) this.#stored(stored.span)
    for (const entry of batch) entry.resolve()
    this.#written(batch.length)
    if (this.live && this.#compactionDue() && !this.#compacting && !this.#queuedCompaction) this.#queueCompaction()
  }

  /** The updates are durable in the log while it waits its turn. */
  #queueCompaction () {
    const turn = async () => {
      this.#queuedCompaction = null
      if (!this.live) return
      this.#compacting = this.#compactStored({ exclusive: false })
        .catch(err => this.logger.warn({ err }, 'compaction failed'))
        .then(() => this.#compactHistory())
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

  /** The newest entry this copy knows the shared log holds. */
  #known () {
    if (this.position === null) return this.#newestKnown
    if (this.#newestKnown === null || compareIds(this.position, this.#newestKnown) > 0) return this.position
    return this.#newestKnown
  }

  // The shared log holds less than this copy read or wrote (Redis restarted on older data): the copy
  // holds every acknowledged update, and writes itself back as one. False if that fails.
  async #writeBack () {
    this.logger.error({ doc: this.id, known: this.#known() }, 'storage holds less of the document than was acknowledged; writing it back from memory')
    let stored
    try {
      // Kept in history too, which lost what the log lost: a later time's text holds every edit again.
      const history = this.history ? { at: this.#storedAt(), by: [null] } : undefined
      stored = await this.store.append(this.id, [Y.encodeStateAsUpdate(this.#ydoc)], null, history)
    } catch (err) {
      this.logger.error({ err, doc: this.id }, 'writing the document back failed')
      return false
    }
    this.#storedUpdates = stored.logLength ?? this.#storedUpdates + 1
    if (stored.span) {
      this.#ownSpans.clear()
      this.position = stored.span.last
      this.#newestKnown = stored.span.last
    }
    return true
  }

  /** Past own write now if it follows on from `position`, else once what precedes it is read. @param {{ prev: string, last: string }} span */
  #stored ({ prev, last }) {
    if (this.#newestKnown === null || compareIds(last, this.#newestKnown) > 0) this.#newestKnown = last
    if (prev === this.position) {
      this.#advance(last)
    } else {
      this.#ownSpans.set(prev, last)
    }
  }

  // A snapshot's worth of new bytes pays for encoding the whole document; past half of `maxDocBytes`
  // (which counts the log) the count alone decides.
  #compactionDue () {
    if (this.#storedUpdates < this.compactAfterUpdates) return false
    return this.bytes - this.#snapshotBytes >= this.#snapshotBytes || this.bytes > this.maxDocBytes / 2
  }

  /**
   * The snapshot is handed over only once every update it holds is written (one refused drops it);
   * `exclusive`: in the writes' line, so it writes what is queued itself.
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
      // Own updates past `position` stay in the log too: applying a Yjs update twice is a no-op.
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
   * Who sent an update, for history: an editor's connection, or the author of a server edit (a token's
   * user; none for the API key). None rather than a refusal when that cannot be told.
   * @param {import('socket.io').Socket | undefined} sender @param {Author | undefined} author
   */
  #authorOf (sender, author) {
    if (!this.history) return null
    if (author) return author.kind === 'token' ? author.user : null
    if (!sender) return null
    try {
      return this.history.authorOf(this, sender)?.slice(0, MAX_AUTHOR_LENGTH) ?? null
    } catch {
      return null
    }
  }

  /** The server clock, never going back: history reads a document's times in order. */
  #storedAt () {
    this.#lastStoredAt = Math.max(/** @type {DocHistory} */ (this.history).now(), this.#lastStoredAt)
    return this.#lastStoredAt
  }

  /** Never fails: history's compaction only bounds what history keeps. */
  async #compactHistory () {
    await this.history?.compact(this.id).catch(err => this.logger.warn({ err, doc: this.id }, 'history compaction failed'))
  }

  /** @template T @param {() => Promise<T>} step @returns {Promise<T>} */
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
