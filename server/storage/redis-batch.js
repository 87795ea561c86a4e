// Commands of many documents sent to Redis together. Every command to Redis is a write to its socket
// and a reply read back, each waking another process; under load, on a host where Redis and the
// workers share the cores, those wake-ups cost more than the commands. So a command goes out at
// once when none went out in the last `spacingMs`, and otherwise waits until then with the others
// that arrive meanwhile, all of them in one pipeline: one write, one reply, and one wake-up of each
// process subscribed to their feeds. A quiet server adds no delay; a busy one sends at most one
// pipeline per `spacingMs`.
//
// A Redis Cluster's pipeline must stay on one node, so there each command is sent on its own.

/** @typedef {{ args: unknown[], resolve: (value: any) => void, reject: (err: unknown) => void }} Queued */

export class RedisBatch {
  /** @type {Queued[]} */
  #queued = []
  /** @type {NodeJS.Timeout | null} */
  #timer = null
  #sentAt = -Infinity

  /**
   * @param {import('./redis.js').RedisClient} client
   * @param {string} command a command of the client (a script defined with `defineCommand`)
   * @param {{ spacingMs: number }} options
   */
  constructor (client, command, { spacingMs }) {
    this.client = /** @type {any} */ (client)
    this.command = command
    this.spacingMs = spacingMs
  }

  /**
   * Sends the command with these arguments; resolves with its reply.
   * @param {unknown[]} args
   * @returns {Promise<any>}
   */
  send (args) {
    if (this.client.isCluster) return this.client[this.command](...args)
    return new Promise((resolve, reject) => {
      this.#queued.push({ args, resolve, reject })
      if (this.#timer !== null) return
      const waitMs = this.#sentAt + this.spacingMs - performance.now()
      if (waitMs <= 0) this.#flush()
      else this.#timer = setTimeout(this.#flush, waitMs)
    })
  }

  #flush = () => {
    this.#timer = null
    this.#sentAt = performance.now()
    const queued = this.#queued.splice(0)
    if (queued.length === 1) {
      const [{ args, resolve, reject }] = queued
      this.client[this.command](...args).then(resolve, reject)
      return
    }
    const pipeline = this.client.pipeline()
    for (const { args } of queued) pipeline[this.command](...args)
    pipeline.exec().then(
      (/** @type {[Error | null, unknown][]} */ replies) => replies.forEach(([err, reply], i) => {
        if (err) queued[i].reject(err)
        else queued[i].resolve(reply)
      }),
      (/** @type {unknown} */ err) => { for (const { reject } of queued) reject(err) }
    )
  }
}
