// setTimeout holds a delay of at most 2^31 - 1 ms (about 24.8 days) and fires at once past it; a
// join token may live a year.
const MAX_DELAY_MS = 2 ** 31 - 1

/**
 * Calls `fn` once the clock reaches `atMs` (ms since the epoch), however far off that is, and never
 * synchronously. The timer does not keep the process alive.
 * @param {number} atMs
 * @param {() => void} fn
 * @returns {() => void} cancels the call
 */
export function callAt (atMs, fn) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer
  const arm = () => {
    const wait = atMs - Date.now()
    timer = setTimeout(wait > MAX_DELAY_MS ? arm : fn, Math.max(0, Math.min(wait, MAX_DELAY_MS))).unref()
  }
  arm()
  return () => clearTimeout(timer)
}
