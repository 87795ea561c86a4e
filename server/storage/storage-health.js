// A failed write or refused read marks storage degraded until a write succeeds: health answers 503,
// so balancers send editors elsewhere. One log line per interval, not one per refused update.
const LOG_INTERVAL_MS = 10_000

/**
 * @typedef {object} StorageError
 * @property {string} code the storage error's code (`ENOSPC`, `LEVEL_IO_ERROR`, a Redis reply's first word)
 * @property {string} message
 * @property {number} since epoch ms of the first failure of this run of failures
 */

export class StorageHealth {
  /** @type {StorageError | null} */
  #error = null
  #loggedAt = -Infinity
  errors = 0

  /**
   * @param {import('pino').Logger} logger
   * @param {{ inc: () => void }} counter counts every failed write (tandem_storage_errors_total)
   */
  constructor (logger, counter) {
    this.logger = logger
    this.counter = counter
  }

  /** @returns {StorageError | null} the failure storage is in, or null when writes succeed */
  get error () {
    return this.#error
  }

  /**
   * @param {unknown} err a failed write, or a refused read
   * @param {string} [knownCode] the failure's code, when the store knows it better than `err.code`
   */
  failed (err, knownCode) {
    this.errors++
    this.counter.inc()
    const { code: describedCode, message } = describe(err)
    const code = knownCode ?? describedCode
    this.#error ??= { code, message, since: Date.now() }
    const now = Date.now()
    if (now - this.#loggedAt < LOG_INTERVAL_MS) return
    this.#loggedAt = now
    this.logger.error({ code, cause: message, errors: this.errors }, 'storage refuses writes')
  }

  succeeded () {
    if (!this.#error) return
    this.logger.info({ code: this.#error.code, forMs: Date.now() - this.#error.since }, 'storage takes writes again')
    this.#error = null
    this.#loggedAt = -Infinity
  }
}

/** @param {unknown} err */
function describe (err) {
  const message = err instanceof Error ? err.message : String(err)
  // LevelDB reports the errno only in its message; the code a person searches for is the errno.
  const errno = /No space left on device|Read-only file system|Permission denied|Input\/output error/.exec(message)?.[0]
  const code = errno
    ? { 'No space left on device': 'ENOSPC', 'Read-only file system': 'EROFS', 'Permission denied': 'EACCES', 'Input/output error': 'EIO' }[errno]
    : /** @type {{ code?: unknown }} */ (err)?.code
  return { code: typeof code === 'string' ? code : 'STORAGE_ERROR', message: message.slice(0, 300) }
}
