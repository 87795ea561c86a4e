/**
 * The compactions a process's documents fall due for, run one at a time, each starting no sooner
 * after the one before it ended than that one took.
 *
 * A compaction encodes the whole document on the main thread and rewrites it in storage on the
 * thread pool. Documents that reach the threshold together (a class that started typing at once,
 * the load test's rooms) compacted together: at 600 editors in rooms of 5 on one core, 120 of them
 * and their thread-pool work held the core for 0.4-0.65 s, with event-loop stalls of 44-96 ms that
 * every ACK and broadcast of that stretch waited behind (docs/PERFORMANCE.md, "Compactions one at a
 * time"). Paced, compactions take at most about half of the time, whatever the machine's speed; a
 * log waits a little longer to be compacted, and what it holds is durable meanwhile.
 */
export class CompactionQueue {
  /** @type {{ compact: () => Promise<void>, resolve: () => void, reject: (err: unknown) => void }[]} */
  #waiting = []
  #busy = false

  /**
   * Runs `compact` once the compactions queued before it have run.
   * @param {() => Promise<void>} compact
   * @returns {Promise<void>} settles as `compact` does
   */
  run (compact) {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ compact, resolve, reject })
      if (!this.#busy) this.#next()
    })
  }

  /**
   * Takes a compaction that has not started out of the queue; it resolves without running.
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
