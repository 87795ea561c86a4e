// Many documents' writes go to Redis in one command: under load a command's wake-ups (Redis's and
// every subscriber's) cost more than it. One command is in flight at a time: writes made meanwhile
// wait for its answer and go together. The next goes at the end of the turn if none went in the
// last `spacingMs`, else at the next multiple of `spacingMs` on the wall clock, which a host's
// processes share, so their sends coincide. On a Cluster, one write per command (one slot).

/**
 * @template Item, Reply
 * @typedef {{ item: Item, resolve: (reply: Reply) => void, reject: (err: unknown) => void }} Queued
 */

/** @template Item, Reply */
export class RedisBatch {
  /** @type {Queued<Item, Reply>[]} */
  #queued = []
  /** whether the next send is due, at the end of the turn or on its timer */
  #scheduled = false
  #sentAt = -Infinity
  #inFlight = false

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
      if (this.together) this.#schedule()
      else this.#sendQueued()
    })
  }

  /** The next send: at the end of this turn, or at the next multiple of the spacing, once none is in flight. */
  #schedule () {
    if (this.#inFlight || this.#queued.length === 0 || this.#scheduled) return
    const { spacingMs } = this
    const now = performance.now()
    this.#scheduled = true
    if (now - this.#sentAt >= spacingMs) setImmediate(this.#sendQueued)
    else setTimeout(this.#sendQueued, spacingMs - (performance.timeOrigin + now) % spacingMs)
  }

  #sendQueued = () => {
    this.#scheduled = false
    this.#sentAt = performance.now()
    const queued = this.#queued.splice(0)
    if (this.together) this.#inFlight = true
    this.sendTogether(queued.map(({ item }) => item)).then(
      (replies) => replies.forEach((reply, i) => {
        if (reply instanceof Error) queued[i].reject(reply)
        else queued[i].resolve(reply)
      }),
      (/** @type {unknown} */ err) => { for (const { reject } of queued) reject(err) }
    ).finally(() => {
      if (!this.together) return
      this.#inFlight = false
      this.#schedule()
    })
  }
}
