import { now, sleepUntil } from '../loadtest/clock.js'
import { readMachineBusyMs } from '../loadtest/process-stats.js'

// Idle enough to start a run: the machine busy under a quarter of a core, over a second, while
// nothing of the benchmark runs. On a machine shared with other work (tests), this keeps runs from
// starting in the middle of someone else's burst; what still overlapped shows in the figures.
const QUIET_PERCENT = 25
const QUIET_SAMPLE_MS = 1000

/** A wait at least this long is worth a note in the progress output, in ms. */
export const NOTE_WAIT_MS = 2 * QUIET_SAMPLE_MS

/**
 * Resolves once the machine was nearly idle for a second, or after `maxMs`; returns the time waited.
 * @param {number} maxMs
 */
export async function waitForQuiet (maxMs) {
  const started = now()
  while (now() - started < maxMs) {
    const before = readMachineBusyMs()
    const at = now()
    await sleepUntil(at + QUIET_SAMPLE_MS)
    const after = readMachineBusyMs()
    if (before === null || after === null || (after - before) / (now() - at) * 100 < QUIET_PERCENT) break
  }
  return now() - started
}
