import { setTimeout as delay } from 'node:timers/promises'

// The load generator's one clock. `process.hrtime()` reads the same monotonic clock in every worker
// thread of the process (unlike `performance.now()`, whose origin is per thread), so a send time taken
// in one worker and a receipt time taken in another can be subtracted.

/** Milliseconds on the process-wide monotonic clock, with sub-microsecond resolution. */
export function now () {
  const [seconds, nanoseconds] = process.hrtime()
  return seconds * 1e3 + nanoseconds / 1e6
}

/**
 * Resolves at `at` on this clock (at once if it has passed), or as soon as `signal` aborts.
 * @param {number} at
 * @param {AbortSignal} [signal]
 */
export async function sleepUntil (at, signal) {
  try {
    await delay(Math.max(0, at - now()), undefined, { signal })
  } catch (err) {
    if (/** @type {Error} */ (err).name !== 'AbortError') throw err
  }
}
