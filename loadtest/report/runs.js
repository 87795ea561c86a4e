import { formatMs, formatNumber, formatPercent } from './format.js'
import { table } from './table.js'

// runs.md: the medians of every figure per level first, then each run's figures and verdict. The
// columns are those of report.md, through the same formats; every figure comes from runs.json.

/** Header and format of each figure, in the order of the tables. */
const COLUMNS = /** @type {const} */ ([
  ['ACK p50', 'ackP50Ms', formatMs],
  ['ACK p99', 'ackP99Ms', formatMs],
  ['Broadcast p50', 'broadcastP50Ms', formatMs],
  ['Broadcast p99', 'broadcastP99Ms', formatMs],
  ['Server update p99', 'serverUpdateP99Ms', formatMs],
  ['Server CPU', 'serverCpuPercent', formatPercent],
  ['Deliveries/s', 'deliveriesPerSecond', formatNumber],
  ['CPU ms per 1,000 deliveries', 'cpuMsPer1000Deliveries', (/** @type {number | null} */ value) => formatNumber(value, 1)],
  ['Lost', 'lost', formatNumber]
])

/** @param {import('../runs.js').RunFigures} level */
const cells = level => COLUMNS.map(([, key, format]) => format(level[key]))
const headers = COLUMNS.map(([header]) => header)

/** @param {import('../runs.js').RunsSummary} summary */
export function renderRuns ({ startedAt, command, target, runs, medians }) {
  return [
    `# Tandem load test, ${runs.length} runs, ${startedAt}`,
    `\`${command}\` against ${target}. Latencies in ms; server CPU of one core. Each run's full report: ${runs.map(run => `\`${run.dir}\``).join(', ')}.`,
    `## Medians of ${runs.length} runs`,
    table(['Editors', ...headers, 'Within the SLOs'],
      medians.map(level => [level.editors, ...cells(level), `${level.runsWithinSlos} of ${runs.length} runs`])),
    '## Each run',
    table(['Run', 'Editors', ...headers, 'Within the SLOs'],
      runs.flatMap((run, i) => run.levels.map(level => [i + 1, level.editors, ...cells(level), level.withinSlos ? 'yes' : 'no']))),
    runs.map((run, i) => `- Run ${i + 1} (${run.startedAt}): ${run.verdict}`).join('\n')
  ].join('\n\n') + '\n'
}
