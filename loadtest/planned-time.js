import { formatDuration } from './report/format.js'
import { REST_ENDPOINTS } from './rest.js'

// How long a run takes at the least, from its options alone: the time it spends editing, measuring
// and settling. Creating sessions, connecting, draining and checking convergence add a few seconds
// per level on top (docs/LOADTEST.md gives a whole run at the defaults).

/**
 * @param {Readonly<import('./options.js').Options>} options
 * @returns {{ ms: number, breakdown: string }} `breakdown`: how it adds up
 */
export function plannedTime (options) {
  let ms
  let sum = ''
  if (options.soakMs !== null) {
    ms = options.soakMs + options.soakSettleMs
    sum = `a ${formatDuration(options.soakMs)} soak, the documents' unload (up to ${formatDuration(options.soakUnloadWaitMs)}), then ${formatDuration(options.soakSettleMs)} settling`
  } else {
    const levels = options.editors.length
    const restMs = REST_ENDPOINTS.length * options.restDurationMs
    ms = levels * (options.warmupMs + options.durationMs) + restMs
    sum = `${levels} level${levels === 1 ? '' : 's'} × (${formatDuration(options.warmupMs)} warm-up + ${formatDuration(options.durationMs)} measured)` +
      (restMs > 0 ? ` + ${REST_ENDPOINTS.length} REST endpoints × ${formatDuration(options.restDurationMs)}` : '')
  }
  return { ms: ms * options.runs, breakdown: options.runs > 1 ? `${options.runs} runs of ${sum}` : sum }
}
