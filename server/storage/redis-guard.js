import { randomUUID } from 'node:crypto'
import { AppError } from '../errors.js'
import { isReady } from './redis.js'
/** @import { RedisClient } from './redis.js' */

// What Redis refuses, told to StorageHealth: a ready connection can refuse every write for minutes
// (READONLY, OOM, MISCONF, no reply); a refusal becomes UNAVAILABLE. While degraded a probe writes
// a key of its own, so a process nobody writes to (503) learns when writes work again.

const PROBE_MIN_MS = 100
const PROBE_MAX_MS = 2000
const PROBE_TTL_MS = 10_000

export class RedisGuard {
  /** @type {Promise<void> | null} the probe while storage is degraded */
  #probing = null
  #closed = false
  #probeKey = `tandem:probe:${randomUUID()}`

  /** @param {RedisClient} client @param {{ health: import('./storage-health.js').StorageHealth }} deps */
  constructor (client, { health }) {
    this.client = client
    this.health = health
  }

  /**
   * A command that writes; its success tells StorageHealth that Redis takes writes.
   * @template T @param {() => Promise<T>} command
   * @param {(reply: T) => boolean} [wrote] whether the reply says Redis wrote (a script may return before writing)
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

  /** A read proves nothing about writes: a replica serves reads. @template T @param {() => Promise<T>} command */
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

  /** @param {unknown} err @param {string} message */
  #refused (err, message) {
    if (err instanceof AppError) return err
    // A connection that is down makes the process not ready, and logs itself.
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
 * A Redis reply's first word (OOM, READONLY...), or ETIMEDOUT for a reply that never came.
 * @param {unknown} err
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
