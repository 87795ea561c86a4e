// Many documents' writes go to Redis in one command: under load a command's wake-ups (Redis's and
// every subscriber's) cost more than it. A write goes at once if none went in the last `spacingMs`,
// else with those arriving meanwhile at the next multiple of `spacingMs` on the wall clock, which a
// host's processes share, so their sends coincide (docs/CLUSTER.md, "One run of the script per
// send, and a send every 5 ms at most"). On a Cluster, one write per command (one slot).

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
   *   `sendTogether`: one command for the items, resolving with each one's reply or error in order
   */
  constructor ({ spacingMs, together, sendTogether }) {
    this.spacingMs = spacingMs
    this.together = together
    this.sendTogether = sendTogether
  }

  /** @param {Item} item @returns {Promise<Reply>} its reply */
  send (item) {
    return new Promise((resolve, reject) => {
      this.#queued.push({ item, resolve, reject })
      if (!this.together) return this.#sendQueued()
      if (this.#timer !== null) return
      const now = performance.now()
      if (now - this.#sentAt >= this.spacingMs) this.#sendQueued()
      else this.#timer = setTimeout(this.#sendQueued, this.spacingMs - (performance.timeOrigin + now) % this.spacingMs)
    })
  }

  #sendQueued = () => {
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
