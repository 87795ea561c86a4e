// One exit code per thing an operator does about a failed start, so a supervisor can tell a full
// disk from a damaged store without the log (docs/CONFIGURATION.md, "Exit codes").

export const EXIT_CODES = Object.freeze({
  /** a shutdown that failed or outlived SHUTDOWN_TIMEOUT_MS (also Node's own code for a crash) */
  FAILED: 1,
  /** an environment variable is invalid */
  CONFIG: 2,
  /** DATA_DIR's filesystem is full */
  STORAGE_FULL: 10,
  /** the LevelDB files in DATA_DIR are damaged or incomplete */
  STORAGE_CORRUPT: 11,
  /** DATA_DIR is not a directory, or not writable (read-only filesystem, permissions) */
  DATA_DIR_UNUSABLE: 12,
  /** another process holds DATA_DIR's lock */
  STORAGE_LOCKED: 13,
  /** LevelDB failed to open for another reason (an I/O error) */
  STORAGE_FAILED: 14,
  /** the Redis server lacks something the configuration asks for */
  REDIS_UNSUPPORTED: 15
})

/** @typedef {keyof typeof EXIT_CODES} ExitReason */

/** Why the server cannot start: one log line, and the exit code (server/index.js). */
export class StartError extends Error {
  /**
   * @param {ExitReason} reason @param {string} message what is wrong and what to do about it
   * @param {Record<string, unknown>} details where (dataDir, file, redis) and the cause
   */
  constructor (reason, message, details) {
    super(message)
    this.name = 'StartError'
    this.reason = reason
    this.details = details
  }

  get exitCode () {
    return EXIT_CODES[this.reason]
  }
}
