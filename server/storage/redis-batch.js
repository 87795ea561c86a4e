// Many documents' writes go to Redis in one command: under load a command's wake-ups (Redis's and
// every subscriber's) cost more than it. One command is in flight at a time: writes made meanwhile
// wait for its answer and go together. The next goes at the end of the turn if none went in the
// last `spacingMs`, else at the next multiple of `spacingMs` on the wall clock, which a host's
// processes share, so their sends coincide. A write that no other process waits for (its editors
// here have it already) waits for twice the spacing unless one that others wait for goes first:
// a room on one process then costs half the sends (docs/CLUSTER.md, "The path of an update"). On
// a Cluster, one write per command (one slot).

/**
 * @template Item, Reply
 * @typedef {{ item: Item, resolve: (reply: Reply) => void, reject: (err: unknown) => void }} Queued
 */

/** @template Item, Reply */
export class RedisBatch {
  /** @type {Queued<Item, Reply>[]} */
  #queued = []
  /** @type {(() => void) | null} cancels the next send's timer */
  #cancel = null
  /** whether the timer is set for the spacing, or sooner */
  #timerSoon = false
  /** whether a queued write is waited for elsewhere */
  #soon = false
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

  /**
   * @param {Item} item @param {boolean} [soon] false when no other process waits for it
   * @returns {Promise<Reply>} its reply
   */
  send (item, soon = true) {
    return new Promise((resolve, reject) => {
      this.#queued.push({ item, resolve, reject })
      if (soon) this.#soon = true
      if (this.together) this.#schedule()
      else this.#sendQueued()
    })
  }

  /** The next send: at the end of this turn, or at the next multiple of the spacing, once none is in flight. */
  #schedule () {
    if (this.#inFlight || this.#queued.length === 0) return
    if (this.#cancel !== null) {
      if (this.#timerSoon || !this.#soon) return
      this.#cancel()
    }
    const spacingMs = this.#soon ? this.spacingMs : 2 * this.spacingMs
    const now = performance.now()
    this.#timerSoon = this.#soon
    if (now - this.#sentAt >= spacingMs) {
      const immediate = setImmediate(this.#sendQueued)
      this.#timerSoon = true
      this.#cancel = () => clearImmediate(immediate)
    } else {
      const timer = setTimeout(this.#sendQueued, spacingMs - (performance.timeOrigin + now) % spacingMs)
      this.#cancel = () => clearTimeout(timer)
    }
  }

  #sendQueued = () => {
    this.#cancel = null
    this.#soon = false
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
