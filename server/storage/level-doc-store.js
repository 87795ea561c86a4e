// Documents in the embedded LevelDB: per document, an optional snapshot under `<id>!s` and an update
// log under `<id>!u!<seq>` (hex seq, so keys sort in write order). Compaction writes the new snapshot,
// then range-deletes the log it covers: a crash in between leaves a snapshot and a log that overlap,
// and loading applies both, which changes nothing (applying a Yjs update twice is a no-op).
// LevelDB's own range delete keeps the per-key work off the event loop: deleting 500 keys in one
// batch from JavaScript made compactions the main source of ACK tail latency.

const SEQ_WIDTH = 12

/** @typedef {import('./doc-store.js').DocStore} DocStore */
/** @typedef {{ ops: { type: 'put', key: string, value: Uint8Array }[], waiters: { resolve: () => void, reject: (err: unknown) => void }[] }} Gathering */

/** @implements {DocStore} */
export class LevelDocStore {
  kind = 'leveldb'
  // LevelDB locks its directory: this process is the only writer.
  shared = false
  /** @type {Map<string, number>} next log sequence number per document touched since start */
  #nextSeq = new Map()
  /** @type {Gathering | null} appends waiting for the next batch */
  #gathering = null
  /** whether a batch is being written */
  #writing = false

  /**
   * @param {import('./level-guard.js').LevelGuard} guard the database; every write goes through it
   * @param {{ syncWrites: boolean }} options
   */
  constructor (guard, { syncWrites }) {
    this.guard = guard
    /** @type {import('abstract-level').AbstractSublevel<any, any, string, Uint8Array>} */
    this.docs = guard.sublevel('docs', { valueEncoding: 'view' })
    /** @type {any} classic-level's own option, absent from abstract-level's types */
    this.writeOptions = { sync: syncWrites }
  }

  /** @param {string} docId */
  async load (docId) {
    const snapshot = await this.guard.read(() => this.docs.get(snapshotKey(docId)))
    const { updates, position } = await this.readSince(docId, null)
    return { updates: snapshot ? [snapshot, ...updates] : updates, position }
  }

  /** @param {string} docId @param {string | null} position the last log key read */
  async readSince (docId, position) {
    const range = logRange(docId)
    const log = await this.guard.read(() => this.docs.iterator(position ? { ...range, gt: position } : range).all())
    return {
      updates: log.map(([, update]) => update),
      position: log.length > 0 ? log[log.length - 1][0] : position
    }
  }

  /** @param {string} docId @param {Uint8Array[]} updates */
  async append (docId, updates) {
    let seq = await this.#seq(docId)
    const ops = updates.map(update => ({ type: /** @type {const} */ ('put'), key: logKey(docId, seq++), value: update }))
    // Appends to one document run one at a time (LiveDoc), so its numbers can be taken before the
    // write lands; a failed write leaves a gap in them, which costs nothing (keys only sort).
    this.#nextSeq.set(docId, seq)
    await this.#write(ops)
    return {}
  }

  /**
   * Group commit across documents: one batch is written at a time, and the appends of every
   * document that arrive meanwhile go to LevelDB together in the next one (one fsync with
   * SYNC_WRITES), which starts once the last one landed, at the end of the event loop's turn at the
   * earliest. Each append resolves once its batch is written; a failed batch fails every append in it.
   * The busier the server, the larger each batch: every batch costs LevelDB a thread-pool hop and a
   * write to its log whatever its size.
   * @param {{ type: 'put', key: string, value: Uint8Array }[]} ops
   * @returns {Promise<void>}
   */
  #write (ops) {
    return new Promise((resolve, reject) => {
      if (!this.#gathering) {
        this.#gathering = { ops: [], waiters: [] }
        if (!this.#writing) setImmediate(() => this.#flush())
      }
      this.#gathering.ops.push(...ops)
      this.#gathering.waiters.push({ resolve, reject })
    })
  }

  #flush () {
    const { ops, waiters } = /** @type {Gathering} */ (this.#gathering)
    this.#gathering = null
    this.#writing = true
    this.guard.write(() => this.docs.batch(ops, this.writeOptions)).then(
      () => { for (const waiter of waiters) waiter.resolve() },
      (err) => { for (const waiter of waiters) waiter.reject(err) }
    ).finally(() => {
      this.#writing = false
      if (this.#gathering) setImmediate(() => this.#flush())
    })
  }

  /**
   * @param {string} docId
   * @param {() => Promise<{ snapshot: Uint8Array }>} makeSnapshot
   */
  async compact (docId, makeSnapshot) {
    // As the only writer, and called between appends, the snapshot covers every log entry.
    const { snapshot } = await makeSnapshot()
    await this.guard.write(() => this.docs.put(snapshotKey(docId), snapshot, this.writeOptions))
    await this.guard.write(() => this.docs.clear({ ...logRange(docId), ...this.writeOptions }))
    return true
  }

  /** @param {string} docId */
  async delete (docId) {
    const keys = await this.guard.read(() => this.docs.keys(logRange(docId)).all())
    await this.guard.write(() => this.docs.batch([
      ...keys.map(key => ({ type: /** @type {const} */ ('del'), key })),
      { type: 'del', key: snapshotKey(docId) }
    ], this.writeOptions))
    this.#nextSeq.delete(docId)
  }

  /** @param {string} docId */
  async #seq (docId) {
    const known = this.#nextSeq.get(docId)
    if (known !== undefined) return known
    const [lastKey] = await this.guard.read(() => this.docs.keys({ ...logRange(docId), reverse: true, limit: 1 }).all())
    const next = lastKey ? parseInt(lastKey.slice(-SEQ_WIDTH), 16) + 1 : 0
    this.#nextSeq.set(docId, next)
    return next
  }
}

/** @param {string} docId */
const snapshotKey = docId => `${docId}!s`

/** @param {string} docId @param {number} seq */
const logKey = (docId, seq) => `${docId}!u!${seq.toString(16).padStart(SEQ_WIDTH, '0')}`

/** @param {string} docId */
const logRange = docId => ({ gt: `${docId}!u!`, lt: `${docId}!u!~` })
