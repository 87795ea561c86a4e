/**
 * Resolves once `check` returns or resolves to something truthy, checking every `intervalMs`;
 * rejects after `timeoutMs` naming `what` and the last error `check` threw. The one way tests wait:
 * for the state they mean, never for a fixed time. An absence is asserted only once something that
 * must come after it has arrived (a marker), never after a sleep.
 * @param {() => unknown} check
 * @param {{ timeoutMs?: number, intervalMs?: number, what?: string }} [options]
 */
export async function eventually (check, { timeoutMs = 10000, intervalMs = 10, what = 'condition' } = {}) {
  const deadline = performance.now() + timeoutMs
  let lastError
  for (;;) {
    try {
      if (await check()) return
    } catch (err) {
      lastError = err
    }
    if (performance.now() >= deadline) break
    await new Promise(resolve => setTimeout(resolve, intervalMs))
  }
  throw new Error(`${what} not met within ${timeoutMs} ms${lastError ? `: ${lastError}` : ''}`)
}
