/**
 * A process's due compactions, one at a time, each starting no sooner after the last ended than that
 * one took. Documents that reach the threshold together would otherwise hold the main thread and the
 * thread pool at once, stalling every ACK (docs/PERFORMANCE.md, "Compactions one at a time").
 */
export class CompactionQueue {
  /** @type {{ compact: () => Promise<void>, resolve: () => void, reject: (err: unknown) => void }[]} */
  #waiting = []
  #busy = false

  /**
   * @param {() => Promise<void>} compact
   * @returns {Promise<void>} settles as `compact` does, once those queued before it have run
   */
  run (compact) {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ compact, resolve, reject })
      if (!this.#busy) this.#next()
    })
  }

  /**
   * Drops a compaction that has not started; it resolves without running.
   * @param {() => Promise<void>} compact as given to `run`
   */
  cancel (compact) {
    const index = this.#waiting.findIndex(entry => entry.compact === compact)
    if (index === -1) return
    const [entry] = this.#waiting.splice(index, 1)
    entry.resolve()
  }

  #next () {
    const entry = this.#waiting.shift()
    if (!entry) {
      this.#busy = false
      return
    }
    this.#busy = true
    const started = performance.now()
    entry.compact().then(entry.resolve, entry.reject).finally(() => {
      setTimeout(() => this.#next(), performance.now() - started)
    })
  }
}
