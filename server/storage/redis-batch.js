// Writes of many documents sent to Redis together. Every command to Redis is a write to its socket
// and a reply read back, each waking another process; under load, on a host where Redis and the
// workers share the cores, those wake-ups cost more than the commands. So a write goes out at once
// when none went out in the last `spacingMs`, and otherwise waits, with the others that arrive
// meanwhile, for the next multiple of `spacingMs` on the wall clock, all of them in one command
// (`sendTogether`): one write, one reply, one script run in Redis, and one wake-up of each process
// subscribed to their feeds. A quiet server adds no delay; a busy one sends one command per
// `spacingMs`. The wall clock is every process's of a host: their sends fall at about the same
// moments, so Redis runs their scripts in one wake-up, and a process reads its reply and the
// others' feed messages in one wake-up rather than one each.
//
// A Redis Cluster's command must stay on one slot, so there each write is sent on its own.

/**
 * @template Item, Reply
 * @typedef {{ item: Item, resolve: (reply: Reply) => void, reject: (err: unknown) => void }} Queued
 */

/** @template Item, Reply */
export class RedisBatch {
  /** @type {Queued<Item, Reply>[]} */
  #queued = []
  /** @type {NodeJS.Timeout | null} */
  #timer = null
  #sentAt = -Infinity

  /**
   * @param {{ spacingMs: number, together: boolean, sendTogether: (items: Item[]) => Promise<(Reply | Error)[]> }} options
   *   `sendTogether` sends items in one command and resolves with each one's reply or error, in
   *   their order; `together: false` (a Redis Cluster) calls it with one item at a time.
   */
  constructor ({ spacingMs, together, sendTogether }) {
    this.spacingMs = spacingMs
    this.together = together
    this.sendTogether = sendTogether
  }

  /**
   * Sends the item; resolves with its reply.
   * @param {Item} item
   * @returns {Promise<Reply>}
   */
  send (item) {
    return new Promise((resolve, reject) => {
      this.#queued.push({ item, resolve, reject })
      if (!this.together) return this.#flush()
      if (this.#timer !== null) return
      const now = performance.now()
      if (now - this.#sentAt >= this.spacingMs) this.#flush()
      else this.#timer = setTimeout(this.#flush, this.spacingMs - (performance.timeOrigin + now) % this.spacingMs)
    })
  }

  #flush = () => {
    this.#timer = null
    this.#sentAt = performance.now()
    const queued = this.#queued.splice(0)
    this.sendTogether(queued.map(({ item }) => item)).then(
      (replies) => replies.forEach((reply, i) => {
        if (reply instanceof Error) queued[i].reject(reply)
        else queued[i].resolve(reply)
      }),
      (/** @type {unknown} */ err) => { for (const { reject } of queued) reject(err) }
    )
  }
}
