import { randomUUID } from 'node:crypto'
import { AppError } from '../errors.js'
import { isReady } from './redis.js'

// What Redis refuses, told to StorageHealth, as LevelGuard does for LevelDB. A connected Redis can
// refuse every write for minutes (a replica: READONLY; past maxmemory: OOM; a failed RDB save:
// MISCONF; paused or asleep: no reply in time), while the connection stays ready: health answers
// 503 `degraded` with the reply's code until a write succeeds again. Whatever Redis refuses becomes
// UNAVAILABLE (retry later) with the refusal as its cause, so callers log it at debug and the log
// gets StorageHealth's one line per interval instead of one per refused update or join.
//
// While degraded, a probe writes a short-lived key of its own, so a process that nobody writes to
// (the balancer sends it no editors while it answers 503) still finds out when Redis takes writes.

const PROBE_MIN_MS = 100
const PROBE_MAX_MS = 2000
const PROBE_TTL_MS = 10_000

export class RedisGuard {
  /** @type {Promise<void> | null} the probe while storage is degraded */
  #probing = null
  #closed = false
  #probeKey = `tandem:probe:${randomUUID()}`

  /**
   * @param {import('./redis.js').RedisClient} client
   * @param {{ health: import('./storage-health.js').StorageHealth }} deps
   */
  constructor (client, { health }) {
    this.client = client
    this.health = health
  }

  /**
   * Runs a command that writes; its success tells StorageHealth that Redis takes writes.
   * @template T
   * @param {() => Promise<T>} command
   * @param {(reply: T) => boolean} [wrote] whether the reply says Redis wrote: a script that
   *   returned before its first write would pass even on a Redis that refuses writes
   * @returns {Promise<T>}
   */
  async write (command, wrote = () => true) {
    let reply
    try {
      reply = await command()
    } catch (err) {
      throw this.#refused(err, 'storage is not taking writes; retry')
    }
    if (wrote(reply)) this.health.succeeded()
    return reply
  }

  /**
   * Runs a command that only reads (a read proves nothing about writes: a replica serves reads).
   * @template T
   * @param {() => Promise<T>} command
   * @returns {Promise<T>}
   */
  async read (command) {
    try {
      return await command()
    } catch (err) {
      throw this.#refused(err, 'storage could not be read; retry')
    }
  }

  /** Stops probing; the client is closed by its owner. */
  close () {
    this.#closed = true
  }

  /**
   * @param {unknown} err
   * @param {string} message
   */
  #refused (err, message) {
    if (err instanceof AppError) return err
    // A connection that is down already makes the process not ready, and logs itself.
    if (isReady(this.client)) {
      this.health.failed(err, codeOf(err))
      this.#probing ??= this.#probe().finally(() => { this.#probing = null })
    }
    return new AppError('UNAVAILABLE', message, undefined, { cause: err })
  }

  async #probe () {
    // Bounded by the process's life: it probes until a write succeeds or the server closes.
    for (let attempt = 0; !this.#closed && this.health.error !== null; attempt++) {
      await new Promise(resolve => setTimeout(resolve, Math.min(PROBE_MIN_MS * 2 ** attempt, PROBE_MAX_MS)).unref())
      if (this.#closed || this.health.error === null) return
      try {
        await this.client.set(this.#probeKey, '1', 'PX', PROBE_TTL_MS)
      } catch {
        continue
      }
      this.health.succeeded()
    }
  }
}

/**
 * The code a person searches for: a Redis reply's first word (OOM, READONLY, MISCONF, BUSY,
 * LOADING, CLUSTERDOWN...), ETIMEDOUT for a reply that did not come in time.
 * @param {unknown} err
 * @returns {string}
 */
export function codeOf (err) {
  const error = /** @type {{ name?: unknown, message?: unknown, code?: unknown, previousErrors?: { message?: unknown }[] } | null} */ (err)
  // ioredis's own error for `commandTimeout`: it carries no code.
  if (error?.message === 'Command timed out') return 'ETIMEDOUT'
  if (error?.name === 'ReplyError') {
    // A transaction refused as a whole (EXECABORT) says why in the replies to its commands.
    const reply = String(error.previousErrors?.[0]?.message ?? error.message)
    return /^[A-Z][A-Z_]+(?= |$)/.exec(reply)?.[0] ?? 'REDIS_ERROR'
  }
  return typeof error?.code === 'string' ? error.code : 'REDIS_ERROR'
}
