// setTimeout fires at once past its largest delay; a join token may live a year.
const MAX_DELAY_MS = 2 ** 31 - 1

/**
 * Calls `fn` once the clock reaches `atMs`, however far off, never synchronously, without keeping the
 * process alive; returns what cancels the call. @param {number} atMs @param {() => void} fn
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
