import { decodeCheckpoint, decodeStep, encodeCheckpoint, encodeStep } from './history-store.js'
import { execMulti } from './redis.js'

// History in Redis, in keys of its own under the document's hash tag (so in its Cluster slot, and
// never read by a load): the entries stream `…:hist` (id = stored time in ms; fields `u` update, `b`
// author; written by the append script with the update), folded minutes `…:hmin` (id = the minute's
// end), keyframes `…:hkey` (id = their time), the base hash `…:hbase` and the checkpoints hash `…:hcp`.

const LOCK_TTL_MS = 30000

/** @param {string} docId */
export function historyKeysOf (docId) {
  const tag = `tandem:{doc:${docId}}`
  return {
    entries: `${tag}:hist`,
    steps: `${tag}:hmin`,
    keyframes: `${tag}:hkey`,
    base: `${tag}:hbase`,
    checkpoints: `${tag}:hcp`,
    lock: `${tag}:hlock`
  }
}

/** @typedef {import('./history-store.js').HistoryStore} HistoryStore */
/** @typedef {[Buffer, Buffer[]][]} StreamEntries as ioredis returns them with `…Buffer` */

/** @implements {HistoryStore} */
export class RedisHistory {
  /**
   * @param {import('./redis.js').RedisClient & Pick<import('./redis-doc-store.js').DocScripts, 'tandemUnlock'>} client
   *   the document store's, whose unlock script a fold's lock shares
   * @param {import('./redis-guard.js').RedisGuard} guard
   */
  constructor (client, guard) {
    this.client = client
    this.guard = guard
  }

  /** @param {string} docId @param {number} after @param {number} upTo @param {number} limit */
  async entries (docId, after, upTo, limit) {
    const found = await this.#range(historyKeysOf(docId).entries, after, upTo, limit)
    return found.map(([id, fields]) => {
      const { u, b } = fieldsOf(fields)
      return { at: timeOf(id), by: b?.toString('utf8') ?? null, update: new Uint8Array(u) }
    })
  }

  /** @param {string} docId @param {number} after @param {number} upTo @param {number} limit */
  async steps (docId, after, upTo, limit) {
    const found = await this.#range(historyKeysOf(docId).steps, after, upTo, limit)
    return found.map(([, fields]) => decodeStep(fieldsOf(fields).u))
  }

  /** @param {string} docId @param {number} at */
  async keyframeAt (docId, at) {
    const key = historyKeysOf(docId).keyframes
    const [found] = /** @type {StreamEntries} */ (await this.guard.read(() => this.client.xrevrangeBuffer(key, String(at), '-', 'COUNT', 1)))
    return found ? { at: timeOf(found[0]), state: new Uint8Array(fieldsOf(found[1]).u) } : null
  }

  /** @param {string} docId @param {number} after @param {number} upTo */
  async keyframeTimes (docId, after, upTo) {
    const found = await this.#range(historyKeysOf(docId).keyframes, after, upTo, Infinity)
    return found.map(([id]) => timeOf(id))
  }

  /** @param {string} docId */
  async base (docId) {
    const [at, data] = await this.guard.read(() => this.client.hmgetBuffer(historyKeysOf(docId).base, 'at', 'data'))
    return at && data ? { at: Number(at.toString()), state: new Uint8Array(data) } : null
  }

  /**
   * The memory of the entries, minutes, keyframes and base. Counted whole (SAMPLES 0): a sample of a
   * stream's entries says little when keyframes sit beside minutes. @param {string} docId
   */
  async bytes (docId) {
    const { entries, steps, keyframes, base } = historyKeysOf(docId)
    const sizes = await Promise.all([entries, steps, keyframes, base].map(key =>
      this.guard.read(() => /** @type {Promise<number | null>} */ (this.client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')))))
    return sizes.reduce((/** @type {number} */ sum, size) => sum + (size ?? 0), 0)
  }

  /**
   * One MULTI, under a lock so that two processes never fold the same minutes; a fold that loses the
   * lock changes nothing. @param {string} docId @param {import('./history-store.js').Fold} fold
   */
  async fold (docId, { foldedUpTo, steps = [], keyframes = [], droppedKeyframes = [], base }) {
    const keys = historyKeysOf(docId)
    const token = `${process.pid}-${Math.random().toString(36).slice(2)}`
    const locked = await this.guard.write(() => this.client.set(keys.lock, token, 'PX', LOCK_TTL_MS, 'NX'))
    if (!locked) return
    try {
      const lastStep = await this.#newestId(keys.steps)
      const lastKeyframe = await this.#newestId(keys.keyframes)
      const multi = this.client.multi()
      if (foldedUpTo !== undefined) multi.xtrim(keys.entries, 'MINID', `${foldedUpTo + 1}-0`)
      if (droppedKeyframes.length > 0) multi.xdel(keys.keyframes, ...droppedKeyframes.map(at => `${at}-0`))
      // Ids only grow: what another fold wrote already is not written again.
      for (const step of steps) {
        if (step.end > lastStep && (!base || step.end > base.at)) multi.xadd(keys.steps, `${step.end}-0`, 'u', encodeStep(step))
      }
      for (const { at, state } of keyframes) {
        if (at > lastKeyframe && (!base || at > base.at)) multi.xadd(keys.keyframes, `${at}-0`, 'u', Buffer.from(state))
      }
      if (base) {
        for (const key of [keys.entries, keys.steps, keys.keyframes]) multi.xtrim(key, 'MINID', `${base.at + 1}-0`)
        multi.hset(keys.base, 'at', String(base.at), 'data', Buffer.from(base.state))
      }
      await this.guard.write(() => execMulti(multi))
    } finally {
      await this.client.tandemUnlock(keys.lock, token).catch(() => {})
    }
  }

  /** @param {string} docId @param {import('./history-store.js').Checkpoint} checkpoint @param {Uint8Array} state */
  async addCheckpoint (docId, checkpoint, state) {
    const added = await this.guard.write(() => this.client.hsetnx(historyKeysOf(docId).checkpoints, checkpoint.name, encodeCheckpoint(checkpoint, state)))
    return added === 1
  }

  /** @param {string} docId @param {string} name */
  async checkpoint (docId, name) {
    const value = await this.guard.read(() => this.client.hgetBuffer(historyKeysOf(docId).checkpoints, name))
    return value ? decodeCheckpoint(value) : null
  }

  /** @param {string} docId */
  async checkpoints (docId) {
    const values = await this.guard.read(() => this.client.hvalsBuffer(historyKeysOf(docId).checkpoints))
    return values.map(value => decodeCheckpoint(value).checkpoint).sort((a, b) => a.at - b.at || (a.name < b.name ? -1 : 1))
  }

  /** @param {string} key @param {number} after @param {number} upTo @param {number} limit @returns {Promise<StreamEntries>} */
  async #range (key, after, upTo, limit) {
    const start = after < 0 ? '-' : `${after + 1}-0`
    if (upTo <= after) return []
    return /** @type {Promise<StreamEntries>} */ (this.guard.read(() => Number.isFinite(limit)
      ? this.client.xrangeBuffer(key, start, String(upTo), 'COUNT', limit)
      : this.client.xrangeBuffer(key, start, String(upTo))))
  }

  /** @param {string} key the time of a stream's newest entry, -1 when empty */
  async #newestId (key) {
    const [newest] = /** @type {StreamEntries} */ (await this.guard.read(() => this.client.xrevrangeBuffer(key, '+', '-', 'COUNT', 1)))
    return newest ? timeOf(newest[0]) : -1
  }
}

/** @param {Buffer} id a stream id */
const timeOf = id => Number(id.toString().split('-')[0])

/** @param {Buffer[]} fields @returns {Record<string, Buffer>} */
function fieldsOf (fields) {
  /** @type {Record<string, Buffer>} */
  const byName = {}
  for (let i = 0; i + 1 < fields.length; i += 2) byName[fields[i].toString()] = fields[i + 1]
  return byName
}
