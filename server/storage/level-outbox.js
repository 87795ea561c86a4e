import { randomUUID } from 'node:crypto'

// Deliveries in the embedded LevelDB, their own key range, keyed `<due time>!<uuid>` so a range read
// from the start finds what is due. Only this process opens the database: what it holds in flight is
// kept in memory, and a restart finds everything again.

/** @import { Delivery, TakenDelivery } from './outbox.js' */
/** @typedef {import('./outbox.js').Outbox} Outbox */

/** Milliseconds since 1970 in base 36, of one width: keys sort by time. @param {number} ms */
const timeOf = ms => Math.max(0, Math.floor(ms)).toString(36).padStart(10, '0')
/** @param {number} dueAtMs */
const dueKey = dueAtMs => `${timeOf(dueAtMs)}!${randomUUID()}`

/** @implements {Outbox} */
export class LevelOutbox {
  /** @type {Set<string>} keys taken and not yet answered */
  #held = new Set()
  /** @type {number | null} deliveries stored; counted at first need, so a damaged table cannot stop a start */
  #count = null
  /** @type {Map<string, number>} */
  #windows = new Map()
  /** @type {Map<string, { value: string, until: number }>} */
  #marks = new Map()
  /** @type {Promise<unknown>} a take and the writes that end deliveries run one at a time: a read begun
   * before a delivery was removed or moved would hand out its old key again */
  #turn = Promise.resolve()

  /**
   * @param {import('./level-guard.js').LevelGuard} guard every write goes through it
   * @param {{ syncWrites: boolean, max: number }} options
   */
  constructor (guard, { syncWrites, max }) {
    this.guard = guard
    this.max = max
    /** @type {import('abstract-level').AbstractSublevel<any, any, string, Delivery>} */
    this.deliveries = guard.sublevel('webhooks', { valueEncoding: 'json' })
    /** @type {any} classic-level's own option, absent from abstract-level's types */
    this.writeOptions = { sync: syncWrites }
  }

  /** @param {Delivery[]} deliveries */
  async add (deliveries) {
    await this.depth()
    // Read after the await: adds that ran meanwhile have counted themselves.
    const count = /** @type {number} */ (this.#count)
    if (count + deliveries.length > this.max) return false
    this.#count = count + deliveries.length
    try {
      const now = Date.now()
      await this.guard.write(() => this.deliveries.batch(deliveries.map(value => ({ type: 'put', key: dueKey(now), value })), this.writeOptions))
    } catch (err) {
      this.#count = /** @type {number} */ (this.#count) - deliveries.length
      throw err
    }
    return true
  }

  /** @template T @param {() => Promise<T>} step @returns {Promise<T>} */
  #inTurn (step) {
    const next = this.#turn.then(step)
    this.#turn = next.catch(() => {})
    return next
  }

  /** @param {number} max */
  take (max) {
    return this.#inTurn(() => this.#takeDue(max))
  }

  /** @param {number} max */
  async #takeDue (max) {
    const due = await this.guard.read(() => this.deliveries.iterator({ lt: timeOf(Date.now() + 1), limit: max + this.#held.size }).all())
    /** @type {TakenDelivery[]} */
    const taken = []
    for (const [key, delivery] of due) {
      if (taken.length >= max) break
      if (this.#held.has(key)) continue
      this.#held.add(key)
      taken.push({ ...delivery, key })
    }
    return taken
  }

  /** @param {TakenDelivery} taken */
  remove ({ key }) {
    return this.#inTurn(async () => {
      await this.guard.write(() => this.deliveries.del(key, this.writeOptions))
      this.#held.delete(key)
      if (this.#count !== null) this.#count--
    })
  }

  /** @param {TakenDelivery} taken @param {number} dueAtMs */
  retry ({ key, ...delivery }, dueAtMs) {
    const value = { ...delivery, attempts: delivery.attempts + 1 }
    return this.#inTurn(async () => {
      await this.guard.write(() => this.deliveries.batch([
        { type: 'del', key },
        { type: 'put', key: dueKey(dueAtMs), value }
      ], this.writeOptions))
      this.#held.delete(key)
    })
  }

  /** @param {TakenDelivery} taken */
  async release ({ key }) {
    this.#held.delete(key)
  }

  async depth () {
    this.#count ??= (await this.guard.read(() => this.deliveries.keys().all())).length
    return this.#count
  }

  /** One process: the window is this process's. @param {string} name @param {number} ms */
  async claimWindow (name, ms) {
    const now = Date.now()
    const until = this.#windows.get(name) ?? 0
    if (until > now) return until - now
    this.#windows.set(name, now + ms)
    for (const [other, end] of this.#windows) if (end <= now) this.#windows.delete(other)
    return 0
  }

  /** @param {string} name @param {string} value @param {number} ms */
  async replaceMark (name, value, ms) {
    const now = Date.now()
    const mark = this.#marks.get(name)
    this.#marks.set(name, { value, until: now + ms })
    for (const [other, { until }] of this.#marks) if (until <= now) this.#marks.delete(other)
    return mark && mark.until > now ? mark.value : null
  }
}
