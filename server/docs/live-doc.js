import * as Y from 'yjs'
import { AppError } from '../errors.js'
import { AwarenessStates } from './awareness-states.js'
import { compareIds } from '../storage/stream-ids.js'
import { hasPending } from './update-shape.js'

/** Received writes a copy holds before it applies them anyway. */
const MAX_RECEIVED = 32

/**
 * Clients that ever wrote to a document from which its editors' updates wait for the end of the
 * turn, to be applied in one transaction: a Yjs transaction, even an empty one, costs about 4 µs
 * plus 0.15 µs per client (10 µs at 64 clients, 47 µs at 300, Node 26 here). Below, an update is
 * applied at once, and its ACK and relay wait for nothing.
 */
const BATCHED_FROM_CLIENTS = 64

/** Origin of updates read back from the store, so nothing mistakes them for a client's. */
export const STORE_ORIGIN = Symbol('store')

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
 * it, and the write queue that makes every acknowledged update durable.
 *
 * Writes are group-committed: updates that arrive while a write is in flight are stored together in
 * the next one, so a busy document costs one storage round trip per batch rather than per update.
 * Appends run one at a time. A compaction runs beside them, one at a time: its snapshot holds every
 * update applied when it is taken, and the store removes only what the snapshot holds, so the writes
 * behind it do not wait for it (they did, and every 500th update's ACK waited for a snapshot to be
 * encoded and written). One that falls due waits its turn among the process's documents'
 * (compaction-queue.js).
 *
 * When the store is shared with other processes, the copy follows the stored log: `receive` applies
 * what other processes publish as they store it (redis-doc-feed.js), and `catchUp` reads the log
 * from `position` whenever a message was missed, and before every join, so every worker answers with
 * the complete document. Whatever either brings that the copy lacked goes to this process's editors
 * (`onRemoteUpdate`): an update whose message was lost reaches them from the log. Received writes
 * are applied when the whole copy is next read (`ydoc`), several in one transaction rather than one
 * per message (13 % less CPU per delivery with a room's editors spread over four processes;
 * docs/CLUSTER.md); this process's editors' updates are checked and applied without them
 * (`appliedYdoc`) unless they build on them.
 *
 * In a document that many clients wrote to, an editor's update is applied at the end of the turn
 * that took it (`take`), with the others taken in the turn, in one Yjs transaction: Yjs reads the
 * document's state vector at both ends of a transaction, one entry per client that ever wrote,
 * which in one document of 300 editors cost more than a quarter of the server's busy time at one
 * transaction per update. A document of few clients applies each update at once. Every update is
 * checked before it is taken, against the copy as applied so far; one that builds on a waiting
 * update has it applied first. Whatever reads the whole copy (`ydoc`), and whatever waits on its
 * writes (`flush`, `settled`), applies what waits first.
 *
 * A failed write ends the document's life in memory: the Y.Doc holds the refused updates (they were
 * applied before being written), and a later update that builds on them would pass every check and
 * be stored without what it depends on, unreadable by any process that loads the document. So the
 * refused batch and everything queued behind it are refused, nothing more is written or compacted
 * from this copy, and `onUntrusted` has the registry reload the document from storage.
 */
export class LiveDoc {
  /** @type {Set<import('socket.io').Socket>} */
  sockets = new Set()
  awareness = new AwarenessStates()
  /** @type {NodeJS.Timeout | undefined} */
  idleTimer
  /** @type {{ update: Uint8Array, resolve: () => void, reject: (err: unknown) => void }[]} updates applied, waiting to be written */
  #queue = []
  /** @type {TakenUpdate[]} this process's editors' updates taken this turn, not applied yet */
  #taken = []
  /** @type {import('./update-check.js').Additions} what the updates taken this turn may add */
  takenAdditions = { structs: 0, clients: 0 }
  /** @type {Promise<unknown>} tail of the chain that serialises store operations */
  #tail = Promise.resolve()
  #storedUpdates
  /** @type {Promise<void> | null} */
  #reading = null
  #readAgain = false
  /** Stored size of the document (snapshot plus log), counting applied updates still being written. */
  bytes = 0
  /** @type {unknown} the write failure that ended this copy, or null */
  failed = null
  /** The copy may hold what storage does not (a failed write, an update failed halfway): nothing is compacted from it. */
  #untrusted = false
  /** @type {Map<string, string>} this process's own writes in a shared log: position before → last entry */
  #ownSpans = new Map()
  #ydoc
  /** @type {Uint8Array[]} other processes' writes, sent to the editors here, not yet applied */
  #received = []
  /** @type {Promise<void> | null} the compaction under way beside the writes */
  #compacting = null
  /** bytes of the snapshot this copy last compacted to; 0 until it has compacted */
  #snapshotBytes = 0

  /**
   * @param {string} id
   * @param {Y.Doc} ydoc
   * @param {object} deps
   * @param {import('../storage/doc-store.js').DocStore} deps.store
   * @param {import('../storage/doc-store.js').StoredDoc} deps.stored what the document was loaded from
   * @param {number} deps.compactAfterUpdates
   * @param {import('./compaction-queue.js').CompactionQueue} deps.compactions where the compactions
   *   this copy falls due for wait for their turn; `flush` compacts at once
   * @param {number} deps.maxDocBytes the stored size past which updates are refused
   * @param {(docId: string) => void} deps.onUntrusted called when the copy holds what storage does
   *   not: once when a write fails, and when an update fails halfway through applying
   * @param {(doc: LiveDoc, update: Uint8Array) => void} deps.onRemoteUpdate called with what another
   *   process stored that this copy lacked, to send to this process's editors
   * @param {(doc: LiveDoc, taken: TakenUpdate[]) => void} deps.onApplied called with this process's
   *   editors' updates once applied, to send to the other editors here
   * @param {import('pino').Logger} deps.logger
   * @param {import('../metrics.js').Metrics} deps.metrics
   */
  constructor (id, ydoc, { store, stored, compactAfterUpdates, compactions, maxDocBytes, onUntrusted, onRemoteUpdate, onApplied, logger, metrics }) {
    this.id = id
    this.#ydoc = ydoc
    this.store = store
    this.position = stored.position
    this.#storedUpdates = stored.updates.length
    this.bytes = byteSum(stored.updates)
    this.compactAfterUpdates = compactAfterUpdates
    this.compactions = compactions
    this.maxDocBytes = maxDocBytes
    this.onUntrusted = onUntrusted
    this.onRemoteUpdate = onRemoteUpdate
    this.onApplied = onApplied
    this.logger = logger
    this.metrics = metrics
  }

  /**
   * The document with everything applied: the writes received from other processes, and the updates
   * taken this turn. Both are applied when the whole copy is next needed (a join, a compaction, an
   * update that builds on them) if not before, several in one transaction.
   * @returns {Y.Doc}
   */
  get ydoc () {
    if (this.#received.length > 0) this.#apply(this.#received.splice(0))
    this.applyTaken()
    return this.#ydoc
  }

  /**
   * The document as applied so far: writes received from other processes, and updates taken this
   * turn, may still wait. An update of an editor here is checked against this, and only one that
   * builds on what waits has it applied first (accept-update.js): editors mostly build on their own
   * text and on what they were sent, so what waits is applied in larger groups than one transaction
   * per update. Applying Yjs updates in another order gives the same document, and whatever an
   * update may build on in this copy, it may build on once more is applied.
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
   * end of the turn with the others taken in the turn, in one Yjs transaction: see the class), sent
   * to the other editors here (`onApplied`) and stored. Resolves once it is stored. Rejects with
   * INVALID_UPDATE if Yjs fails to apply it, with that failure if another update of the turn fails
   * (`applyTaken`), or with the store's error.
   * @param {Uint8Array} update checked against `appliedYdoc`
   * @param {import('socket.io').Socket} sender
   * @param {import('./update-check.js').Additions} additions what it may add (update-check.js)
   * @returns {Promise<void>}
   */
  take (update, sender, additions) {
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
   * One that fails halfway leaves part of it in memory, and the copy is reloaded from storage, as
   * after a failed write: it is refused as INVALID_UPDATE, and the others of the turn with its
   * error (retry), so that nothing is written from a copy no longer trusted.
   */
  applyTaken () {
    if (this.#taken.length === 0) return
    const taken = this.#taken.splice(0)
    this.takenAdditions.structs = 0
    this.takenAdditions.clients = 0
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
      this.#distrust()
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
   * Queues an applied update's write; writes are group-committed (see the class).
   * @param {{ update: Uint8Array, resolve: () => void, reject: (err: unknown) => void }} entry
   */
  #enqueue (entry) {
    if (this.failed) {
      entry.reject(this.failed)
      return
    }
    this.#queue.push(entry)
    if (this.#queue.length === 1) this.#exclusive(() => this.#writeQueued())
  }

  /**
   * Brings `ydoc` up to date with what other processes stored. Resolves after a read that started
   * after this call; concurrent calls share one read loop.
   * @returns {Promise<void>}
   */
  catchUp () {
    if (!this.store.shared) return Promise.resolve()
    this.#readAgain = true
    this.#reading ??= this.#readLoop().finally(() => { this.#reading = null })
    return this.#reading
  }

  /** Compacts the stored log into one snapshot once every pending write and compaction has landed. */
  flush () {
    this.applyTaken()
    return this.#exclusive(async () => {
      await this.#compacting
      if (this.#storedUpdates > 1 && !this.#untrusted) await this.#compact()
    })
  }

  /** Resolves once every update taken so far, and the compaction under way, has been attempted. */
  settled () {
    this.applyTaken()
    return this.#exclusive(async () => { await this.#compacting })
  }

  /**
   * A write another process published: applied when it follows on from `position`, else the log is
   * read from there (a message was missed, or this one was read already).
   * @param {import('../storage/redis-doc-feed.js').FeedMessage} message
   */
  receive ({ prev, last, updates }) {
    if (compareIds(last, /** @type {string} */ (this.position)) <= 0) return
    if (prev !== this.position || this.#reading) {
      this.catchUp().catch(err => this.logger.debug({ err }, 'catch-up after a missed message failed'))
      return
    }
    // Following on from `position`, the message holds only what the copy lacks (another process's
    // writes reach it no other way): its updates go to the editors as they are, not re-encoded.
    this.#received.push(...updates)
    this.bytes += byteSum(updates)
    for (const update of updates) this.onRemoteUpdate(this, update)
    this.#advance(last)
    // A process whose editors only watch applies them now and then, so they do not pile up.
    if (this.#received.length >= MAX_RECEIVED) this.#apply(this.#received.splice(0))
  }

  async #readLoop () {
    while (this.#readAgain) {
      this.#readAgain = false
      const { updates, position } = await this.store.readSince(this.id, this.position)
      this.#integrate(updates)
      this.#advance(position)
    }
  }

  /**
   * Applies stored updates as one transaction; what they held that the copy lacked goes to the
   * editors in this process.
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

  /** Nothing more is compacted from this copy, and the registry reloads the document from storage. */
  #distrust () {
    this.#untrusted = true
    this.onUntrusted(this.id)
  }

  async #writeQueued () {
    const batch = this.#queue.splice(0)
    if (this.failed) {
      for (const entry of batch) entry.reject(this.failed)
      return
    }
    let stored
    try {
      stored = await this.store.append(this.id, batch.map(entry => entry.update))
    } catch (err) {
      this.failed = err
      // Updates queued meanwhile build on the refused ones: they are refused too.
      for (const entry of [...batch, ...this.#queue.splice(0)]) entry.reject(err)
      this.#distrust()
      return
    }
    this.#storedUpdates = stored.logLength ?? this.#storedUpdates + batch.length
    if (stored.span) this.#stored(stored.span)
    for (const entry of batch) entry.resolve()
    if (this.#compactionDue() && !this.#compacting) {
      // The updates are already durable in the log; a failed compaction only postpones the next one.
      // It waits its turn; a copy no longer trusted by then is compacted no more (see the class).
      this.#compacting = this.compactions.run(async () => { if (!this.#untrusted) await this.#compact() })
        .catch(err => this.logger.warn({ err }, 'compaction failed'))
        .finally(() => { this.#compacting = null })
    }
  }

  /**
   * Moves past a write to the shared log (which the store published to other processes) if it
   * follows on from `position`; else it is passed once the entries before it have been read.
   * @param {{ prev: string, last: string }} span
   */
  #stored ({ prev, last }) {
    if (prev === this.position) {
      this.#advance(last)
    } else {
      this.#ownSpans.set(prev, last)
    }
  }

  /**
   * Whether the log has grown enough to be compacted: `compactAfterUpdates` updates, and at least as
   * many bytes as the last snapshot. A compaction encodes the whole document, so its cost grows with
   * the document; the bytes keep it to one per document's size of new writes. By the count alone,
   * one document of 300 editors was compacted three times a second: 6.5 % of the main thread's busy
   * time in a profile, in stalls of 10 to 30 ms that the editors' ACKs waited behind. Past half of
   * `maxDocBytes` the count alone decides again: the size limit counts the log too, and a document
   * that fits once compacted must not be refused for the log it has not compacted yet.
   */
  #compactionDue () {
    if (this.#storedUpdates < this.compactAfterUpdates) return false
    return this.bytes - this.#snapshotBytes >= this.#snapshotBytes || this.bytes > this.maxDocBytes / 2
  }

  async #compact () {
    const covered = this.#storedUpdates
    const compacted = await this.store.compact(this.id, async () => {
      await this.catchUp()
      // The snapshot may also hold updates past `position` (this process's own, not read back yet);
      // they stay in the log too, and applying a Yjs update twice is a no-op.
      const snapshot = Y.encodeStateAsUpdate(this.ydoc)
      this.bytes = snapshot.byteLength
      this.#snapshotBytes = snapshot.byteLength
      return { snapshot, position: this.position }
    })
    // Appends stored meanwhile stay in the log.
    this.#storedUpdates = Math.max(1, this.#storedUpdates - covered + 1)
    if (compacted) this.metrics.compactions.inc()
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

/** @param {Uint8Array[]} updates */
function byteSum (updates) {
  let sum = 0
  for (const update of updates) sum += update.byteLength
  return sum
}
