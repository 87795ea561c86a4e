import { decodeCheckpoint, decodeStep, encodeCheckpoint, encodeStep } from './history-store.js'

// Embedded history, in its own sublevel so that loading a document never reads it. Per document:
// entries `<id>!e!<at>!<n>` (author, update; written by LevelDocStore's move, in the same batch as
// the updates), folded minutes `<id>!m!<end>`, keyframes `<id>!k!<at>`, the base `<id>!base` and
// checkpoints `<id>!c!<name>`. Times are 12 hex digits, so keys sort by time.

const TIME_WIDTH = 12
/** Marks an entry whose author is unknown. */
const NO_AUTHOR = 0xffff

/** @typedef {import('./history-store.js').HistoryStore} HistoryStore */
/** @typedef {import('./history-store.js').HistoryEntry & { key: string }} KeyedEntry */
/** @typedef {{ type: 'put', sublevel: any, key: string, value: Uint8Array } | { type: 'del', sublevel: any, key: string }} HistoryOp */

/** @implements {HistoryStore} */
export class LevelHistory {
  /** entries stored in this run, in order: the second part of their keys */
  #counter = 0

  /**
   * @param {import('./level-guard.js').LevelGuard} guard
   * @param {(docId: string) => KeyedEntry[]} held entries durable in the update log, not moved yet
   * @param {() => Promise<void>} moveHeld moves them to LevelDB
   */
  constructor (guard, held, moveHeld) {
    this.guard = guard
    this.held = held
    this.moveHeld = moveHeld
    /** @type {import('abstract-level').AbstractSublevel<any, any, string, Uint8Array>} */
    this.level = guard.sublevel('history', { valueEncoding: 'view' })
  }

  /**
   * Each update as an entry with the key it will have, in the order they were stored.
   * @param {string} docId @param {Uint8Array[]} updates @param {import('./update-log.js').UpdatesHistory} history
   * @returns {KeyedEntry[]}
   */
  keyed (docId, updates, { at, by }) {
    return updates.map((update, i) => ({ key: `${docId}!e!${hex(at)}!${hex(this.#counter++)}`, at, by: by[i], update }))
  }

  /** Puts for a batch of LevelDocStore's move. @param {KeyedEntry[]} entries @returns {HistoryOp[]} */
  entryOps (entries) {
    return entries.map(({ key, by, update }) => ({ type: 'put', sublevel: this.level, key, value: encodeEntry(by, update) }))
  }

  /** @param {string} docId @param {number} after @param {number} upTo @param {number} limit */
  async entries (docId, after, upTo, limit) {
    // Taken first: an entry moved while LevelDB is read is then found twice, and kept once.
    const held = this.held(docId).filter(entry => entry.at > after && entry.at <= upTo)
    const found = await this.guard.read(() => this.level.iterator(timeRange(docId, 'e', after, upTo, limit)).all())
    const moved = new Set(found.map(([key]) => key))
    const entries = [
      ...found.map(([key, value]) => ({ key, at: parseInt(key.split('!')[2], 16), ...decodeEntry(value) })),
      ...held.filter(entry => !moved.has(entry.key))
    ].sort((a, b) => a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
    return entries.slice(0, limit).map(({ at, by, update }) => ({ at, by, update }))
  }

  /** @param {string} docId @param {number} after @param {number} upTo @param {number} limit */
  async steps (docId, after, upTo, limit) {
    const found = await this.guard.read(() => this.level.values(timeRange(docId, 'm', after, upTo, limit)).all())
    return found.map(decodeStep)
  }

  /** @param {string} docId @param {number} at */
  async keyframeAt (docId, at) {
    const [found] = await this.guard.read(() => this.level.iterator({ ...timeRange(docId, 'k', -1, at, 1), reverse: true }).all())
    return found ? { at: parseInt(found[0].slice(-TIME_WIDTH), 16), state: found[1] } : null
  }

  /** @param {string} docId @param {number} after @param {number} upTo */
  async keyframeTimes (docId, after, upTo) {
    const keys = await this.guard.read(() => this.level.keys(timeRange(docId, 'k', after, upTo, Infinity)).all())
    return keys.map(key => parseInt(key.slice(-TIME_WIDTH), 16))
  }

  /** @param {string} docId */
  async base (docId) {
    const value = await this.guard.read(() => this.level.get(`${docId}!base`))
    return value ? decodeState(value) : null
  }

  /**
   * LevelDB's estimate of the disk the entries, minutes and keyframes take (what is still only in
   * memory counts once written out), and the base: no read of the history itself. @param {string} docId
   */
  async bytes (docId) {
    const prefix = `!history!${docId}!`
    const sizes = await Promise.all(['e', 'k', 'm'].map(kind =>
      this.guard.read(() => this.guard.db.approximateSize(`${prefix}${kind}!`, `${prefix}${kind}!~`))))
    return sizes.reduce((sum, size) => sum + size, 0) + ((await this.base(docId))?.state.byteLength ?? 0)
  }

  /** One batch. @param {string} docId @param {import('./history-store.js').Fold} fold */
  async fold (docId, { foldedUpTo, steps = [], keyframes = [], droppedKeyframes = [], base }) {
    // Entries the fold replaces may still be held: moved later, they would come back.
    if (this.held(docId).length > 0) await this.moveHeld()
    /** @type {HistoryOp[]} */
    const ops = []
    const dropped = async (/** @type {string} */ kind, /** @type {number} */ upTo) => {
      const keys = await this.guard.read(() => this.level.keys(timeRange(docId, kind, -1, upTo, Infinity)).all())
      for (const key of keys) ops.push({ type: 'del', sublevel: this.level, key })
    }
    if (foldedUpTo !== undefined) await dropped('e', foldedUpTo)
    for (const at of droppedKeyframes) ops.push({ type: 'del', sublevel: this.level, key: `${docId}!k!${hex(at)}` })
    if (base) {
      for (const kind of ['e', 'm', 'k']) await dropped(kind, base.at)
      ops.push({ type: 'put', sublevel: this.level, key: `${docId}!base`, value: encodeState(base) })
    }
    for (const step of steps) {
      if (!base || step.end > base.at) ops.push({ type: 'put', sublevel: this.level, key: `${docId}!m!${hex(step.end)}`, value: encodeStep(step) })
    }
    for (const keyframe of keyframes) {
      if (!base || keyframe.at > base.at) ops.push({ type: 'put', sublevel: this.level, key: `${docId}!k!${hex(keyframe.at)}`, value: keyframe.state })
    }
    await this.guard.write(() => this.level.batch(ops))
  }

  /** @param {string} docId @param {import('./history-store.js').Checkpoint} checkpoint @param {Uint8Array} state */
  async addCheckpoint (docId, checkpoint, state) {
    // One process holds the database: nothing else can take the name between the read and the put.
    if (await this.checkpoint(docId, checkpoint.name)) return false
    await this.guard.write(() => this.level.put(checkpointKey(docId, checkpoint.name), encodeCheckpoint(checkpoint, state)))
    return true
  }

  /** @param {string} docId @param {string} name */
  async checkpoint (docId, name) {
    const value = await this.guard.read(() => this.level.get(checkpointKey(docId, name)))
    return value ? decodeCheckpoint(value) : null
  }

  /** @param {string} docId */
  async checkpoints (docId) {
    const values = await this.guard.read(() => this.level.values(prefixed(`${docId}!c!`)).all())
    return values.map(value => decodeCheckpoint(value).checkpoint).sort((a, b) => a.at - b.at || (a.name < b.name ? -1 : 1))
  }

  /** Deletes for LevelDocStore's delete of the document. @param {string} docId @returns {Promise<HistoryOp[]>} */
  async deleteOps (docId) {
    const keys = await this.guard.read(() => this.level.keys(prefixed(`${docId}!`)).all())
    return keys.map(key => ({ type: 'del', sublevel: this.level, key }))
  }
}

/** @param {number} value */
const hex = value => value.toString(16).padStart(TIME_WIDTH, '0')

/** Every key that starts with `prefix`, whatever follows (a name may hold any character). @param {string} prefix ending in `!` */
const prefixed = prefix => ({ gt: prefix, lt: `${prefix.slice(0, -1)}"` })

/** @param {string} docId @param {string} name */
const checkpointKey = (docId, name) => `${docId}!c!${name}`

/**
 * Keys of one kind whose time is after `after`, up to `upTo` included.
 * @param {string} docId @param {string} kind @param {number} after @param {number} upTo @param {number} limit
 */
function timeRange (docId, kind, after, upTo, limit) {
  const gt = after < 0 ? `${docId}!${kind}!` : `${docId}!${kind}!${hex(after)}!~`
  const lt = `${docId}!${kind}!${hex(upTo + 1)}`
  return { gt, lt, limit: Number.isFinite(limit) ? limit : -1 }
}

/** @param {string | null} by @param {Uint8Array} update */
function encodeEntry (by, update) {
  const name = by === null ? null : Buffer.from(by, 'utf8')
  const value = Buffer.allocUnsafe(2 + (name?.length ?? 0) + update.byteLength)
  value.writeUInt16LE(name === null ? NO_AUTHOR : name.length, 0)
  name?.copy(value, 2)
  value.set(update, 2 + (name?.length ?? 0))
  return value
}

/** @param {Uint8Array} value */
function decodeEntry (value) {
  const buffer = Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  const length = buffer.readUInt16LE(0)
  if (length === NO_AUTHOR) return { by: null, update: value.subarray(2) }
  return { by: buffer.toString('utf8', 2, 2 + length), update: value.subarray(2 + length) }
}

/** @param {import('./history-store.js').HistoryState} state */
function encodeState ({ at, state }) {
  const value = Buffer.allocUnsafe(8 + state.byteLength)
  value.writeDoubleLE(at, 0)
  value.set(state, 8)
  return value
}

/** @param {Uint8Array} value */
function decodeState (value) {
  return { at: Buffer.from(value.buffer, value.byteOffset, value.byteLength).readDoubleLE(0), state: value.subarray(8) }
}
