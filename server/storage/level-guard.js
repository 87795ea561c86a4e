import { AppError } from '../errors.js'
import { logDamagedTables } from './level-tables.js'

// LevelDB keeps taking writes after one fails, and records after a half-written one are dropped as
// corrupt at the next open, acknowledged or not. So any failed write is fatal to the handle until
// the database is closed and reopened, which recovers the log up to the failure.
const REOPEN_MIN_MS = 100
const REOPEN_MAX_MS = 5000
/** A read LevelDB reports corrupt has the table files checked, at most once a minute. */
const LOCATE_INTERVAL_MS = 60_000

export class LevelGuard {
  /** @type {unknown} the failure the handle is in, until it reopens */
  #fault = null
  /** bumped on every failure: a write started before one is not trusted after it */
  #epoch = 0
  #closed = false
  /** @type {Promise<void> | null} */
  #reopening = null
  /** @type {{ open: () => Promise<void> }[]} sublevels stay closed when their database reopens */
  #sublevels = []
  #locatedAt = -Infinity

  /**
   * @param {import('classic-level').ClassicLevel<string, Uint8Array>} db
   * @param {{ health: import('./storage-health.js').StorageHealth, logger: import('pino').Logger }} deps
   */
  constructor (db, { health, logger }) {
    this.db = db
    this.health = health
    this.logger = logger
  }

  /**
   * Reopened whenever the database is.
   * @template V @param {string} name @param {{ valueEncoding: string }} options
   * @returns {import('abstract-level').AbstractSublevel<any, any, string, V>}
   */
  sublevel (name, { valueEncoding }) {
    const sublevel = this.db.sublevel(name, { keyEncoding: 'utf8', valueEncoding })
    this.#sublevels.push(sublevel)
    // abstract-level types values by an encoding object, not its name.
    return /** @type {any} */ (sublevel)
  }

  /** Whether the handle is open and trusted. */
  get ready () {
    return this.#fault === null && this.db.status === 'open'
  }

  /** Rejects UNAVAILABLE while the handle is failed or reopening. @template T @param {() => Promise<T>} write */
  async write (write) {
    if (this.#fault !== null) throw unavailable()
    const epoch = this.#epoch
    try {
      const result = await write()
      if (epoch !== this.#epoch) throw unavailable()
      this.health.succeeded()
      return result
    } catch (err) {
      if (epoch === this.#epoch) this.#failed(err)
      throw err instanceof AppError ? err : unavailable()
    }
  }

  /**
   * Rejects UNAVAILABLE during a reopen: one more refusal StorageHealth logs, not an error per request.
   * @template T @param {() => Promise<T>} read
   */
  async read (read) {
    if (this.db.status !== 'open') throw unavailable('storage is reopening; retry')
    try {
      return await read()
    } catch (err) {
      if (this.db.status !== 'open') throw unavailable('storage is reopening; retry')
      if (/** @type {{ code?: unknown }} */ (err)?.code === 'LEVEL_CORRUPTION') this.#locateCorruption()
      throw err
    }
  }

  /** A failed write beside the database (the update log), handled as one of its own. @param {unknown} err */
  failedBeside (err) {
    this.#failed(err)
  }

  /** LevelDB's corruption errors name no file: the tables are checked to find it. */
  #locateCorruption () {
    const now = Date.now()
    if (now - this.#locatedAt < LOCATE_INTERVAL_MS) return
    this.#locatedAt = now
    // It never rejects: a check that cannot be made is its own warning.
    logDamagedTables(this.db.location, this.logger)
  }

  /** Stops reopening; the database is closed by its owner. */
  close () {
    this.#closed = true
    return this.#reopening ?? Promise.resolve()
  }

  /** @param {unknown} err */
  #failed (err) {
    this.#epoch++
    this.health.failed(err)
    if (this.#fault !== null) return
    this.#fault = err
    this.#reopening = this.#reopen().finally(() => { this.#reopening = null })
  }

  async #reopen () {
    // Bounded by the process's life: it retries until the database opens or the server closes.
    for (let attempt = 0; !this.#closed; attempt++) {
      await new Promise(resolve => setTimeout(resolve, Math.min(REOPEN_MIN_MS * 2 ** attempt, REOPEN_MAX_MS)))
      if (this.#closed) return
      try {
        await this.db.close()
        await this.db.open()
        for (const sublevel of this.#sublevels) await sublevel.open()
        this.#fault = null
        this.health.succeeded()
        this.logger.warn({ attempt }, 'storage reopened after a failed write')
        return
      } catch (err) {
        this.health.failed(err)
      }
    }
  }
}

function unavailable (message = 'storage is not taking writes; retry') {
  return new AppError('UNAVAILABLE', message)
}
