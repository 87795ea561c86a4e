import { medianOf } from '../loadtest/runs.js'

// The scale bench's figures: what it keeps of a level, the median of a configuration's runs, and the
// comparisons between configurations: each row against the share-nothing processes of its W (W
// embedded processes, no Redis, each room on one: what W processes cost on this machine whatever
// they share), and the step between the two largest process counts of each kind of configuration.

/**
 * @typedef {object} Configuration
 * @property {string} label
 * @property {string} series the kind of configuration, whatever its number of processes: `embedded`,
 *   `share-nothing`, `Redis` (one process), `Redis, each room on one` or `Redis, spread`
 * @property {'single' | 'share-nothing' | 'cluster'} mode
 * @property {import('../loadtest/spread.js').Placement | null} placement of the editors over the processes (null: one process)
 * @property {number} processes
 * @property {number | null} spacingMs the Redis processes' REDIS_APPEND_SPACING_MS; null: their own setting
 */

/** @typedef {Configuration & { error: string | null } & ReturnType<typeof figuresOf>} ScaleRun one configuration, one run */
/** @typedef {ReturnType<typeof compare>[number]} ScaleResult one configuration, the median of its runs, compared */

export const SHARE_NOTHING = 'share-nothing'
/** The figures divided by the share-nothing row's of the same W. */
export const COMPARED = Object.freeze(/** @type {const} */ (['cpuMsPer1000Deliveries', 'ackP50Ms', 'ackP99Ms', 'broadcastP99Ms']))

/**
 * What the bench keeps of a level (null figures when it failed).
 * @param {import('../loadtest/level-result.js').LevelResult | null} level
 * @param {import('./redis-commands.js').CommandCalls | null} [calls] Redis's, over the measured window
 */
export function figuresOf (level, calls = null) {
  return {
    ackP50Ms: level?.ackMs?.p50 ?? null,
    ackP99Ms: level?.ackMs?.p99 ?? null,
    broadcastP99Ms: level?.broadcast.latencyMs?.p99 ?? null,
    deliveriesPerSecond: level?.deliveries.perSecond ?? null,
    receivedPerSecond: level?.deliveries.receivedPerSecond ?? null,
    cpuPercent: level?.serverProcess?.cpuPercent ?? null,
    cpuMsPer1000Deliveries: level?.deliveries.cpuMsPer1000 ?? null,
    perProcess: level?.serverProcess?.processes.map(({ name, cpuPercent, peakRssMB }) => ({ name, cpuPercent, peakRssMB })) ?? [],
    sent: level?.updates.sent ?? 0,
    timedOut: level?.updates.timedOut ?? 0,
    lost: level?.broadcast.lost ?? 0,
    converged: level?.convergence.converged ?? null,
    warnings: level?.generator.warnings ?? [],
    redis: level && calls ? redisRun(calls, level.updates.acked) : null
  }
}

/**
 * Redis's commands over the window per update stored in it: per update the editors sent in the window
 * and got an ACK for, which says nothing of how the server stores it.
 * @param {import('./redis-commands.js').CommandCalls} calls
 * @param {number} storedUpdates
 */
function redisRun (calls, storedUpdates) {
  const commands = sum(Object.values(calls))
  return { commands, storedUpdates, commandsPerUpdate: storedUpdates > 0 ? commands / storedUpdates : null, calls }
}

/**
 * One configuration's runs as one result: the median of each figure over the runs that did not
 * fail, every run's CPU per 1,000 deliveries and Redis counts beside it, and what was lost, timed
 * out or failed in any run. A single run is its own median.
 * @param {ScaleRun[]} runs
 */
export function medianOfRuns (runs) {
  const measuredRuns = runs.filter(run => run.error === null)
  const median = (/** @type {(run: ScaleRun) => number | null} */ figure) => medianOf(measuredRuns.map(figure))
  const [first] = runs
  const redisRuns = measuredRuns.flatMap(run => run.redis ? [run.redis] : [])
  const commandNames = [...new Set(redisRuns.flatMap(run => Object.keys(run.calls)))]
  const perUpdate = (/** @type {string} */ name) => medianOf(redisRuns.map(run => run.storedUpdates > 0 ? (run.calls[name] ?? 0) / run.storedUpdates : null)) ?? 0
  return {
    ...first,
    error: measuredRuns.length > 0 ? null : first.error,
    runErrors: runs.flatMap(run => run.error === null ? [] : [run.error]),
    ackP50Ms: median(run => run.ackP50Ms),
    ackP99Ms: median(run => run.ackP99Ms),
    broadcastP99Ms: median(run => run.broadcastP99Ms),
    deliveriesPerSecond: median(run => run.deliveriesPerSecond),
    receivedPerSecond: median(run => run.receivedPerSecond),
    cpuPercent: median(run => run.cpuPercent),
    cpuMsPer1000Deliveries: median(run => run.cpuMsPer1000Deliveries),
    cpuMsPer1000DeliveriesPerRun: runs.map(run => run.cpuMsPer1000Deliveries),
    perProcess: (measuredRuns[0] ?? first).perProcess.map(({ name }) => ({
      name,
      cpuPercent: median(run => run.perProcess.find(p => p.name === name)?.cpuPercent ?? null),
      peakRssMB: median(run => run.perProcess.find(p => p.name === name)?.peakRssMB ?? null)
    })),
    sent: sum(runs.map(run => run.sent)),
    timedOut: sum(runs.map(run => run.timedOut)),
    lost: sum(runs.map(run => run.lost)),
    converged: measuredRuns.some(run => run.converged === false) ? false : measuredRuns.every(run => run.converged === true) && measuredRuns.length > 0 ? true : null,
    warnings: [...new Set(runs.flatMap(run => run.warnings))],
    redis: redisRuns.length === 0
      ? null
      : {
          commandsPerUpdate: medianOf(redisRuns.map(run => run.commandsPerUpdate)),
          // Each command's calls per stored update, the most called first.
          byCommand: Object.fromEntries(commandNames.map(name => /** @type {[string, number]} */ ([name, perUpdate(name)])).sort((a, b) => b[1] - a[1])),
          perRun: redisRuns
        }
  }
}

/**
 * Each result against its reference, the share-nothing processes of its W (at one process, the
 * embedded one: one process sharing nothing), and against the embedded single process.
 * @param {ReturnType<typeof medianOfRuns>[]} results the embedded single process first
 */
export function compare (results) {
  const [embedded] = results
  return results.map(result => {
    const reference = result.mode === 'single'
      ? null
      : result.processes === 1 ? embedded : results.find(r => r.mode === SHARE_NOTHING && r.processes === result.processes) ?? null
    return {
      ...result,
      shareNothing: reference?.label ?? null,
      timesShareNothing: Object.fromEntries(COMPARED.map(figure => [figure, reference ? ratio(result[figure], reference[figure]) : null])),
      timesEmbedded: ratio(result.cpuMsPer1000Deliveries, embedded.cpuMsPer1000Deliveries)
    }
  })
}

/**
 * For each kind of configuration with more than one process, the CPU per delivery of its largest
 * process count against its next largest: does the last step still pay for itself? One process of a
 * kind is the embedded one for share-nothing, the one Redis process for either placement.
 * @param {ScaleResult[]} results
 */
export function stepsOf (results) {
  const measured = results.filter(r => r.error === null)
  const series = [...new Set(measured.filter(r => r.processes > 1).map(r => r.series))]
  return series.flatMap(name => {
    const atOne = measured.find(r => r.processes === 1 && (name === SHARE_NOTHING ? r.mode === 'single' : r.mode === 'cluster'))
    const [fewer, more] = [...(atOne ? [atOne] : []), ...measured.filter(r => r.series === name)].slice(-2)
    return more ? [{ series: name, from: fewer.processes, to: more.processes, cpuPerDelivery: ratio(more.cpuMsPer1000Deliveries, fewer.cpuMsPer1000Deliveries) }] : []
  })
}

/** @param {number | null} a @param {number | null} b */
export const ratio = (a, b) => a === null || b === null || b === 0 ? null : a / b

/** @param {number[]} values */
const sum = values => values.reduce((total, value) => total + value, 0)
