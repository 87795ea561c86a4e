import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { AppError } from '../errors.js'
import { StartError } from '../exit-codes.js'
import { LevelHistory } from './level-history.js'
import { KINDS, LOG_DIR, UpdateLog, encodeRecord, leftoverFiles, readRecords, readUpdates, updatesLength, writeUpdates } from './update-log.js'

// Embedded LevelDB documents: per document an optional snapshot (`<id>!s`) and entries of several
// updates (`<id>!b!<hex seq>`; old one-update `<id>!u!<seq>` ones are still read). An append is
// acknowledged once in the update log (update-log.js), held here, and moved to LevelDB every
// MOVE_INTERVAL_MS. A compaction writes the snapshot, then deletes the entries it covers: a crash
// between leaves both, and an update applied twice is a no-op. An append's history entries go into
// the same record of the update log and the same batch of the move (level-history.js).

const SEQ_WIDTH = 12
const MOVE_INTERVAL_MS = 100
const RETRY_MAX_MS = 5000
/** A file of the update log is closed, and deleted once moved, past this size. */
const LOG_FILE_BYTES = 16 * 1024 * 1024
/** Updates waiting for LevelDB past this (LevelDB refusing writes) refuse further appends. */
const MAX_WAITING_BYTES = 64 * 1024 * 1024

/** @typedef {import('./doc-store.js').DocStore} DocStore */
/** @typedef {import('./level-history.js').HeldEntry} HistoryEntry */

/** @implements {DocStore} */
export class LevelDocStore {
  kind = 'leveldb'
  shared = false
  /** @type {Map<string, number>} next entry sequence number per document touched since start */
  #nextSeq = new Map()
  /** @type {Map<string, Uint8Array[]>} durable in the update log (and acknowledged), not yet in LevelDB */
  #waiting = new Map()
  #waitingBytes = 0
  /** @type {Map<string, Uint8Array[]>} being written to LevelDB */
  #moving = new Map()
  /** @type {Map<string, HistoryEntry[]>} history entries of the held updates; a compaction never drops them */
  #waitingHistory = new Map()
  /** @type {Map<string, HistoryEntry[]>} history entries being written to LevelDB */
  #movingHistory = new Map()
  /** @type {Promise<void>} the move in progress */
  #moved = Promise.resolve()
  #moveTimer = /** @type {NodeJS.Timeout | undefined} */ (undefined)
  #failedMoves = 0
  #closed = false
  /** @type {Map<string, { deleted: boolean, put?: Promise<unknown> }>} the compaction under way per document */
  #compacting = new Map()

  /**
   * First moves to the database what the update log still holds.
   * @param {import('./level-guard.js').LevelGuard} guard every write goes through it
   * @param {{ dataDir: string, syncWrites: boolean }} config @param {import('pino').Logger} logger
   */
  static async open (guard, { dataDir, syncWrites }, logger) {
    const store = new LevelDocStore(guard, { syncWrites })
    const dir = join(dataDir, LOG_DIR)
    const next = await store.#recover(dir, logger)
    store.log = new UpdateLog(dir, next, { sync: syncWrites })
    return store
  }

  /** @param {import('./level-guard.js').LevelGuard} guard @param {{ syncWrites: boolean }} options */
  constructor (guard, { syncWrites }) {
    this.guard = guard
    /** @type {import('abstract-level').AbstractSublevel<any, any, string, Uint8Array>} */
    this.docs = guard.sublevel('docs', { valueEncoding: 'view' })
    /** @type {any} classic-level's own option, absent from abstract-level's types */
    this.writeOptions = { sync: syncWrites }
    this.history = new LevelHistory(guard, docId => [...this.#movingHistory.get(docId) ?? [], ...this.#waitingHistory.get(docId) ?? []], () => this.#moveHeld())
    /** @type {UpdateLog | null} */
    this.log = null
  }

  /** @param {string} docId */
  async load (docId) {
    // Taken first: an update moved while LevelDB is read is then read twice at worst, never missed.
    const waiting = [...this.#moving.get(docId) ?? [], ...this.#waiting.get(docId) ?? []]
    const snapshot = await this.guard.read(() => this.docs.get(snapshotKey(docId)))
    const single = await this.guard.read(() => this.docs.values(range(docId, SINGLE)).all())
    const several = await this.guard.read(() => this.docs.values(range(docId, SEVERAL)).all())
    const updates = [...single, ...several.flatMap(unframe), ...waiting]
    return { updates: snapshot ? [snapshot, ...updates] : updates, position: null }
  }

  /** LevelDB locks its directory, so nothing new is ever written elsewhere. @param {string} docId */
  async readSince (docId) {
    return this.load(docId)
  }

  /**
   * @param {string} docId @param {Uint8Array[]} updates @param {string | null} [known]
   * @param {import('./update-log.js').UpdatesHistory} [history] kept in the same record
   */
  async append (docId, updates, known, history) {
    if (this.#waitingBytes > MAX_WAITING_BYTES) throw new AppError('UNAVAILABLE', 'storage is not taking writes; retry')
    await this.#writeLog(encodeRecord(KINDS.APPEND, docId, updates, history), () => this.#holdForMove(docId, updates, history))
    return {}
  }

  /**
   * Refused, the record is not stored; answered, it is. Not through the guard: a failed move refuses
   * nothing the log holds, but a failed log write is the guard's to report and recover from.
   * @param {Uint8Array} record @param {() => void} [onDurable]
   */
  async #writeLog (record, onDurable) {
    try {
      await /** @type {UpdateLog} */ (this.log).write(record, onDurable)
    } catch (err) {
      this.guard.failedBeside(err)
      throw new AppError('UNAVAILABLE', 'storage is not taking writes; retry')
    }
  }

  /** @param {string} docId @param {() => Promise<{ snapshot: Uint8Array }>} makeSnapshot */
  async compact (docId, makeSnapshot) {
    const compaction = { deleted: false, put: /** @type {Promise<unknown> | undefined} */ (undefined) }
    this.#compacting.set(docId, compaction)
    try {
      // Entries numbered before `covered` hold updates that were waiting before it was read, so applied
      // to the document before the snapshot is taken; those numbered later may not be in it, and stay.
      const covered = await this.#nextSeqOf(docId)
      const waiting = this.#waiting.get(docId)
      const waited = waiting?.length ?? 0
      const { snapshot } = await makeSnapshot()
      // Deleted meanwhile: the snapshot would bring the document back.
      if (compaction.deleted) return false
      compaction.put = this.guard.write(() => this.docs.put(snapshotKey(docId), snapshot, this.writeOptions))
      await compaction.put
      if (waiting && this.#waiting.get(docId) === waiting) this.#forget(docId, waited)
      await this.guard.write(() => this.docs.clear({ ...range(docId, SINGLE), ...this.writeOptions }))
      await this.guard.write(() => this.docs.clear({ ...range(docId, SEVERAL), lt: entryKey(docId, covered), ...this.writeOptions }))
      return true
    } finally {
      if (this.#compacting.get(docId) === compaction) this.#compacting.delete(docId)
    }
  }

  /** @param {string} docId */
  async delete (docId) {
    // A compaction under way writes no snapshot from now on; one it is writing is deleted with the rest.
    const compaction = this.#compacting.get(docId)
    if (compaction) compaction.deleted = true
    // In the log first, so that a crash before the move cannot bring the document back.
    await this.#writeLog(encodeRecord(KINDS.DELETE, docId))
    // A move under way may still write the document's entries (or, failing, give them back): it
    // ends before these deletes.
    await this.#moved
    await compaction?.put?.catch(() => {})
    this.#forget(docId)
    this.#forgetHistory(docId)
    await this.#deleteFromLevel(docId)
  }

  /** The log's files are deleted once everything held is moved. */
  async close () {
    if (this.#closed) return
    this.#closed = true
    clearTimeout(this.#moveTimer)
    await this.#moved
    const held = () => this.#waiting.size + this.#waitingHistory.size
    if (held() > 0) await this.#moveNow().catch(() => {})
    this.log?.close({ empty: held() === 0 })
  }

  /**
   * Durable in the update log: held until the next move.
   * @param {string} docId @param {Uint8Array[]} updates @param {import('./update-log.js').UpdatesHistory | null} [history]
   */
  #holdForMove (docId, updates, history) {
    const waiting = this.#waiting.get(docId)
    if (waiting) waiting.push(...updates)
    else this.#waiting.set(docId, [...updates])
    for (const update of updates) this.#waitingBytes += update.byteLength
    if (history) {
      const entries = this.history.held(updates, history)
      const held = this.#waitingHistory.get(docId)
      if (held) held.push(...entries)
      else this.#waitingHistory.set(docId, entries)
      for (const update of updates) this.#waitingBytes += update.byteLength
    }
    this.#scheduleMove(MOVE_INTERVAL_MS)
  }

  /** Drops held updates that need no move. @param {string} docId @param {number} [count] all by default */
  #forget (docId, count = Infinity) {
    const waiting = this.#waiting.get(docId) ?? []
    for (const update of waiting.splice(0, count)) this.#waitingBytes -= update.byteLength
    if (waiting.length === 0) this.#waiting.delete(docId)
  }

  /** Moves what is held now, after the move under way; a failure is retried as a scheduled move's is. */
  async #moveHeld () {
    const move = this.#moved.then(() => this.#moveNow())
    this.#moved = move.catch(() => this.#scheduleMove(MOVE_INTERVAL_MS))
    await move
  }

  /** @param {string} docId */
  #forgetHistory (docId) {
    for (const { update } of this.#waitingHistory.get(docId) ?? []) this.#waitingBytes -= update.byteLength
    this.#waitingHistory.delete(docId)
  }

  /**
   * One move at a time: two would each take `#moving`, so a read could miss what the first still
   * writes, and the first could delete a log file the second has not written yet. @param {number} ms
   */
  #scheduleMove (ms) {
    if (this.#moveTimer || this.#closed) return
    this.#moveTimer = setTimeout(() => {
      this.#moveTimer = undefined
      this.#moved = this.#moved.then(() => this.#moveNow()).then(
        () => { this.#failedMoves = 0 },
        () => {
          // LevelGuard reopens LevelDB meanwhile; appends go on, the log holds them.
          this.#failedMoves++
          this.#scheduleMove(Math.min(MOVE_INTERVAL_MS * 2 ** this.#failedMoves, RETRY_MAX_MS))
        })
    }, ms)
  }

  /** One entry per document, then the log files they filled are deleted. */
  async #moveNow () {
    const log = /** @type {UpdateLog} */ (this.log)
    log.rotateIfPast(LOG_FILE_BYTES)
    // Whatever these files hold is waiting now, or was moved before.
    const settled = log.settledFiles()
    this.#moving = this.#waiting
    this.#waiting = new Map()
    const moving = this.#moving
    this.#movingHistory = this.#waitingHistory
    this.#waitingHistory = new Map()
    const movingHistory = this.#movingHistory
    try {
      const ops = [...await this.#entriesOf(moving), ...this.#historyOps(movingHistory)]
      await this.guard.write(() => this.docs.batch(ops, this.writeOptions))
    } catch (err) {
      // Back in front of what arrived meanwhile; their files stay until a move succeeds.
      for (const [docId, updates] of this.#waiting) moving.set(docId, [...moving.get(docId) ?? [], ...updates])
      this.#waiting = moving
      for (const [docId, entries] of this.#waitingHistory) movingHistory.set(docId, [...movingHistory.get(docId) ?? [], ...entries])
      this.#waitingHistory = movingHistory
      throw err
    } finally {
      this.#moving = new Map()
      this.#movingHistory = new Map()
    }
    for (const updates of moving.values()) for (const update of updates) this.#waitingBytes -= update.byteLength
    for (const entries of movingHistory.values()) for (const { update } of entries) this.#waitingBytes -= update.byteLength
    log.deleteFiles(settled)
  }

  /**
   * Moves what a previous run left in the update log to LevelDB and resolves to the log's next file
   * number; refuses to start on a damaged record. @param {string} dir @param {import('pino').Logger} logger
   */
  async #recover (dir, logger) {
    const files = await leftoverFiles(dir)
    if (files.length === 0) return 1
    /** @type {Map<string, Uint8Array[]>} */
    const appended = new Map()
    /** @type {Map<string, HistoryEntry[]>} */
    const histories = new Map()
    /** @type {Set<string>} */
    const deleted = new Set()
    for (const [i, { path, bytes }] of files.entries()) {
      const { records, damage, tornBytes } = readRecords(bytes)
      // Only the last file can end in a write cut short: the next file starts after a whole record.
      if (damage || (tornBytes > 0 && i < files.length - 1)) {
        const offset = damage?.offset ?? bytes.length - tornBytes
        throw new StartError('STORAGE_CORRUPT', `the update log ${path} is damaged (${damage?.problem ?? 'an incomplete record'} at byte ${offset}): ` +
          `restore DATA_DIR from a backup, or to keep only the ${records.length} records before the damage, stop every server on DATA_DIR and run: truncate -s ${offset} ${path}`,
        { file: path, offset, records: records.length })
      }
      if (tornBytes > 0) {
        // Cut short by a crash, or damaged since (then possibly acknowledged): nothing more is readable.
        logger.warn({ file: path, droppedRecords: 1, droppedBytes: tornBytes, records: records.length },
          `the update log ends in an incomplete record: 1 record (${tornBytes} bytes), possibly acknowledged, is dropped`)
      }
      for (const { kind, docId, updates, history } of records) {
        if (kind === KINDS.DELETE) {
          appended.delete(docId)
          histories.delete(docId)
          deleted.add(docId)
        } else {
          appended.set(docId, [...appended.get(docId) ?? [], ...updates])
          if (history) histories.set(docId, [...histories.get(docId) ?? [], ...this.history.held(updates, history)])
        }
      }
    }
    try {
      for (const docId of deleted) await this.#deleteFromLevel(docId)
      const ops = [...await this.#entriesOf(appended), ...this.#historyOps(histories)]
      // Synced whatever SYNC_WRITES says: the log's files are deleted next.
      await this.guard.write(() => this.docs.batch(ops, /** @type {any} */ ({ sync: true })))
    } catch (err) {
      throw new StartError('STORAGE_FAILED', `the update log could not be moved to the database (${err instanceof Error ? err.message : err}); it is kept: start again`, { cause: String(err) })
    }
    for (const { path } of files) await rm(path)
    logger.info({ files: files.length, documents: appended.size, deleted: deleted.size }, 'the update log a previous run left is in the database')
    return files[files.length - 1].file + 1
  }

  /** @param {string} docId */
  async #deleteFromLevel (docId) {
    const keys = [
      ...await this.guard.read(() => this.docs.keys(range(docId, SINGLE)).all()),
      ...await this.guard.read(() => this.docs.keys(range(docId, SEVERAL)).all())
    ]
    const historyOps = await this.history.deleteOps(docId)
    await this.guard.write(() => this.docs.batch([
      ...keys.map(key => ({ type: /** @type {const} */ ('del'), key })),
      { type: 'del', key: snapshotKey(docId) },
      ...historyOps
    ], this.writeOptions))
    this.#nextSeq.delete(docId)
  }

  /** @param {Map<string, HistoryEntry[]>} entriesByDoc */
  #historyOps (entriesByDoc) {
    return [...entriesByDoc].flatMap(([docId, entries]) => this.history.entriesOps(docId, entries))
  }

  /** One new entry per document. @param {Map<string, Uint8Array[]>} updatesByDoc */
  async #entriesOf (updatesByDoc) {
    /** @type {{ type: 'put', key: string, value: Uint8Array }[]} */
    const ops = []
    for (const [docId, updates] of updatesByDoc) ops.push({ type: 'put', key: entryKey(docId, await this.#seq(docId)), value: frame(updates) })
    return ops
  }

  /** Takes the next sequence number of a document's entries. @param {string} docId */
  async #seq (docId) {
    const next = await this.#nextSeqOf(docId)
    this.#nextSeq.set(docId, next + 1)
    return next
  }

  /** The number the document's next entry will take. @param {string} docId */
  async #nextSeqOf (docId) {
    if (!this.#nextSeq.has(docId)) {
      const [lastKey] = await this.guard.read(() => this.docs.keys({ ...range(docId, SEVERAL), reverse: true, limit: 1 }).all())
      // Another caller may have read it meanwhile, and taken numbers since.
      if (!this.#nextSeq.has(docId)) this.#nextSeq.set(docId, lastKey ? parseInt(lastKey.slice(-SEQ_WIDTH), 16) + 1 : 0)
    }
    return /** @type {number} */ (this.#nextSeq.get(docId))
  }
}

const SINGLE = 'u'
const SEVERAL = 'b'

/** @param {string} docId */
const snapshotKey = docId => `${docId}!s`

/** @param {string} docId @param {number} seq */
const entryKey = (docId, seq) => `${docId}!${SEVERAL}!${seq.toString(16).padStart(SEQ_WIDTH, '0')}`

/** @param {string} docId @param {string} kind */
const range = (docId, kind) => ({ gt: `${docId}!${kind}!`, lt: `${docId}!${kind}!~` })

/** Several updates in one value. @param {Uint8Array[]} updates */
function frame (updates) {
  const value = Buffer.allocUnsafe(updatesLength(updates))
  writeUpdates(value, 0, updates)
  return value
}

/** @param {Uint8Array} value */
function unframe (value) {
  const updates = readUpdates(value, 0)
  // Refused like any document that fails to load: never served as if whole.
  if (!updates) throw new Error('a stored entry of the document is damaged')
  return updates
}
