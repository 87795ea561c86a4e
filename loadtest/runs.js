// --runs N: the figures of each run per level, and their medians across the runs, so that a
// comparison (single against cluster, one build against another) rests on medians, not on one
// noisy run. Every run keeps its full report; this is what the runs share.

/**
 * @typedef {object} RunFigures what one level of one run (or the median of the runs) shows
 * @property {number | null} ackP50Ms
 * @property {number | null} ackP99Ms
 * @property {number | null} broadcastP50Ms
 * @property {number | null} broadcastP99Ms
 * @property {number | null} serverUpdateP99Ms from /metrics
 * @property {number | null} serverCpuPercent of one core: /proc when the server runs here, else /metrics
 * @property {number | null} deliveriesPerSecond updates received by the editors in the window
 * @property {number | null} cpuMsPer1000Deliveries server CPU per 1,000 deliveries the server counted
 * @property {number | null} lost
 */

/** @type {readonly (keyof RunFigures)[]} */
export const FIGURES = Object.freeze(['ackP50Ms', 'ackP99Ms', 'broadcastP50Ms', 'broadcastP99Ms', 'serverUpdateP99Ms', 'serverCpuPercent',
  'deliveriesPerSecond', 'cpuMsPer1000Deliveries', 'lost'])

/** @typedef {RunFigures & { editors: number, withinSlos: boolean }} RunLevel */
/** @typedef {RunFigures & { editors: number, runsWithinSlos: number }} MedianLevel */

/** @param {import('./run.js').Report['levels'][number]} level @returns {RunLevel} */
function figuresOf (level) {
  return {
    editors: level.editors,
    ackP50Ms: level.ackMs?.p50 ?? null,
    ackP99Ms: level.ackMs?.p99 ?? null,
    broadcastP50Ms: level.broadcast.latencyMs?.p50 ?? null,
    broadcastP99Ms: level.broadcast.latencyMs?.p99 ?? null,
    serverUpdateP99Ms: level.server?.updateMs.p99 ?? null,
    serverCpuPercent: level.serverProcess?.cpuPercent ?? level.server?.cpuPercent ?? null,
    deliveriesPerSecond: level.deliveries.receivedPerSecond,
    cpuMsPer1000Deliveries: level.deliveries.cpuMsPer1000,
    lost: level.broadcast.lost,
    withinSlos: level.slo.pass
  }
}

/**
 * @param {import('./run.js').Report[]} reports one per run, same options
 * @param {string[]} dirs where each run's report was written
 */
export function summarizeRuns (reports, dirs) {
  const runs = reports.map((report, i) => ({ startedAt: report.startedAt, dir: dirs[i], verdict: report.verdict.summary, levels: report.levels.map(figuresOf) }))
  const medians = runs[0].levels.map(({ editors }, i) => {
    const median = /** @type {RunFigures} */ (Object.fromEntries(FIGURES.map(key => [key, medianOf(runs.map(run => run.levels[i][key]))])))
    return /** @type {MedianLevel} */ ({ editors, ...median, runsWithinSlos: runs.filter(run => run.levels[i].withinSlos).length })
  })
  return {
    tool: 'tandem-loadtest-runs',
    startedAt: reports[0].startedAt,
    finishedAt: /** @type {import('./run.js').Report} */ (reports.at(-1)).finishedAt,
    command: reports[0].settings.command,
    target: reports[0].target.description,
    runs,
    medians
  }
}

/** @typedef {ReturnType<typeof summarizeRuns>} RunsSummary */

/**
 * The middle value (the mean of the two middle ones for an even count), leaving out runs that have
 * no value; null when none has.
 * @param {(number | null)[]} values
 */
export function medianOf (values) {
  const known = /** @type {number[]} */ (values.filter(value => value !== null)).sort((a, b) => a - b)
  if (known.length === 0) return null
  const middle = known.length >> 1
  return known.length % 2 === 1 ? known[middle] : (known[middle - 1] + known[middle]) / 2
}
