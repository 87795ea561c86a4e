import { decodeCheckpoint, decodeStep, encodeCheckpoint, encodeStep } from './history-store.js'

// Embedded history, in its own sublevel so that loading a document never reads it. Per document:
// entries `<id>!e!<newest time>!<n>`, all those of one move in one value (each with its time, author
// and update; written by LevelDocStore's move, in the same batch as the updates), folded minutes
// `<id>!m!<end>`, keyframes `<id>!k!<time>`, the base `<id>!base` and checkpoints `<id>!c!<name>`.
// Times are 12 hex digits, so keys sort by time; a document's times only grow (LiveDoc).

const TIME_WIDTH = 12
/** Entries in one value at most: a read decodes every entry of each value it touches. */
const ENTRIES_PER_VALUE = 256
/** Marks an entry whose author is unknown. */
const NO_AUTHOR = 0xffff

/** @typedef {import('./history-store.js').HistoryStore} HistoryStore */
/** @typedef {import('./history-store.js').HistoryEntry & { seq: number }} HeldEntry `seq`: unique, and growing in the order entries are stored */
/** @typedef {{ type: 'put', sublevel: any, key: string, value: Uint8Array } | { type: 'del', sublevel: any, key: string }} HistoryOp */

/** @implements {HistoryStore} */
export class LevelHistory {
  /** From the clock, so that it still grows after a restart. */
  #seq = Date.now() * 1024

  /**
   * @param {import('./level-guard.js').LevelGuard} guard
   * @param {(docId: string) => HeldEntry[]} held entries durable in the update log, not moved yet
   * @param {() => Promise<void>} moveHeld moves them to LevelDB
   */
  constructor (guard, held, moveHeld) {
    this.guard = guard
    this.heldOf = held
    this.moveHeld = moveHeld
    /** @type {import('abstract-level').AbstractSublevel<any, any, string, Uint8Array>} */
    this.level = guard.sublevel('history', { valueEncoding: 'view' })
  }

  /**
   * Each update as an entry, in the order they were stored.
   * @param {Uint8Array[]} updates @param {import('./update-log.js').UpdatesHistory} history @returns {HeldEntry[]}
   */
  held (updates, { at, by }) {
    return updates.map((update, i) => ({ seq: this.#seq++, at, by: by[i], update }))
  }

  /**
   * The puts of one move's entries of a document, ENTRIES_PER_VALUE to a value: a key per entry would
   * cost a move more than the document's own entries do. @param {string} docId @param {HeldEntry[]} entries
   * @returns {HistoryOp[]}
   */
  entriesOps (docId, entries) {
    /** @type {HistoryOp[]} */
    const ops = []
    for (let i = 0; i < entries.length; i += ENTRIES_PER_VALUE) {
      const some = entries.slice(i, i + ENTRIES_PER_VALUE)
      ops.push({ type: 'put', sublevel: this.level, key: entriesKey(docId, some), value: encodeEntries(some) })
    }
    return ops
  }

  /** @param {string} docId @param {number} after @param {number} upTo @param {number} limit */
  async entries (docId, after, upTo, limit) {
    // Taken first: an entry moved while LevelDB is read is then found twice, and kept once.
    const held = this.heldOf(docId).filter(entry => entry.at > after && entry.at <= upTo)
    const found = await this.guard.read(() => this.#stored(docId, after, upTo, limit))
    const moved = new Set(found.map(entry => entry.seq))
    const entries = [...found, ...held.filter(entry => !moved.has(entry.seq))].sort((a, b) => a.at - b.at || a.seq - b.seq)
    return entries.slice(0, limit).map(({ at, by, update }) => ({ at, by, update }))
  }

  /**
   * Entries in LevelDB stored after `after` up to `upTo`, at least `limit` of them if there are.
   * @param {string} docId @param {number} after @param {number} upTo @param {number} limit
   */
  async #stored (docId, after, upTo, limit) {
    /** @type {HeldEntry[]} */
    const found = []
    const iterator = this.level.iterator({ gt: after < 0 ? `${docId}!e!` : `${docId}!e!${hex(after)}!~`, lt: `${docId}!e!~` })
    try {
      // Values ordered by their newest entry: past the first that ends after `upTo`, none has more.
      for (let next = await iterator.next(); next !== undefined; next = await iterator.next()) {
        const [key, value] = next
        for (const entry of decodeEntries(value)) if (entry.at > after && entry.at <= upTo) found.push(entry)
        if (found.length >= limit || newestOf(key) > upTo) break
      }
    } finally {
      await iterator.close()
    }
    return found
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
    if (this.heldOf(docId).length > 0) await this.moveHeld()
    /** @type {HistoryOp[]} */
    const ops = []
    const dropped = async (/** @type {string} */ kind, /** @type {number} */ upTo) => {
      const keys = await this.guard.read(() => this.level.keys(timeRange(docId, kind, -1, upTo, Infinity)).all())
      for (const key of keys) ops.push({ type: 'del', sublevel: this.level, key })
    }
    if (foldedUpTo !== undefined) ops.push(...await this.#entriesDropped(docId, foldedUpTo))
    for (const at of droppedKeyframes) ops.push({ type: 'del', sublevel: this.level, key: `${docId}!k!${hex(at)}` })
    if (base) {
      ops.push(...await this.#entriesDropped(docId, base.at))
      for (const kind of ['m', 'k']) await dropped(kind, base.at)
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

  /**
   * Deletes the values whose entries were all stored at or before `upTo`, and rewrites the one that
   * holds some of them and later ones too. @param {string} docId @param {number} upTo @returns {Promise<HistoryOp[]>}
   */
  async #entriesDropped (docId, upTo) {
    const keys = await this.guard.read(() => this.level.keys({ gt: `${docId}!e!`, lt: `${docId}!e!${hex(upTo + 1)}` }).all())
    /** @type {HistoryOp[]} */
    const ops = keys.map(key => ({ type: 'del', sublevel: this.level, key }))
    const [straddling] = await this.guard.read(() => this.level.iterator({ gt: `${docId}!e!${hex(upTo)}!~`, lt: `${docId}!e!~`, limit: 1 }).all())
    if (straddling) {
      const entries = decodeEntries(straddling[1])
      const kept = entries.filter(entry => entry.at > upTo)
      if (kept.length < entries.length) ops.push({ type: 'put', sublevel: this.level, key: straddling[0], value: encodeEntries(kept) })
    }
    return ops
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

/** Keyed by the newest entry's time. @param {string} docId @param {HeldEntry[]} entries */
const entriesKey = (docId, entries) => `${docId}!e!${hex(entries[entries.length - 1].at)}!${hex(entries[0].seq)}`

/** @param {string} key */
const newestOf = key => parseInt(key.split('!')[2], 16)

/**
 * Each entry: seq and time (8 bytes each), the author after a 2-byte length (NO_AUTHOR: none), the
 * update after a 4-byte length. @param {HeldEntry[]} entries
 */
function encodeEntries (entries) {
  const names = entries.map(({ by }) => by === null ? null : Buffer.from(by, 'utf8'))
  let length = 0
  for (const [i, { update }] of entries.entries()) length += 22 + (names[i]?.length ?? 0) + update.byteLength
  const value = Buffer.allocUnsafe(length)
  let offset = 0
  for (const [i, { seq, at, update }] of entries.entries()) {
    const name = names[i]
    offset = value.writeDoubleLE(seq, offset)
    offset = value.writeDoubleLE(at, offset)
    offset = value.writeUInt16LE(name === null ? NO_AUTHOR : name.length, offset)
    if (name) offset += name.copy(value, offset)
    offset = value.writeUInt32LE(update.byteLength, offset)
    value.set(update, offset)
    offset += update.byteLength
  }
  return value
}

/** @param {Uint8Array} value @returns {HeldEntry[]} */
function decodeEntries (value) {
  const buffer = Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  const entries = []
  let offset = 0
  // Bounded: every turn moves `offset` forward by at least 22 bytes.
  while (offset < buffer.length) {
    const seq = buffer.readDoubleLE(offset)
    const at = buffer.readDoubleLE(offset + 8)
    const nameLength = buffer.readUInt16LE(offset + 16)
    offset += 18
    const by = nameLength === NO_AUTHOR ? null : buffer.toString('utf8', offset, offset + nameLength)
    if (by !== null) offset += nameLength
    const updateLength = buffer.readUInt32LE(offset)
    offset += 4
    entries.push({ seq, at, by, update: value.subarray(offset, offset + updateLength) })
    offset += updateLength
  }
  return entries
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
