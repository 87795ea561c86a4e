import { formatMs, formatNumber, formatPercent } from '../loadtest/report/format.js'
import { table } from '../loadtest/report/table.js'

// The scale bench's results as markdown: one table, a row per configuration, then what Redis ran per
// stored update, the step between the two largest process counts of each kind, and what disturbed
// the figures.

// Commands named in a Redis row's line, the most called first.
const TOP_COMMANDS = 5

/** @param {number | null} r */
export const formatRatio = r => r === null ? '–' : `${r.toFixed(2)}×`

/** @param {Awaited<ReturnType<typeof import('./scale.js').runScaleBench>>} bench */
export function renderScaleTable ({ startedAt, settings, results, steps }) {
  const notes = results.flatMap(r => [
    ...(r.error !== null ? [`${r.label}: failed: ${oneLine(r.error)}`] : r.runErrors.map(error => `${r.label}: a run failed: ${oneLine(error)}`)),
    ...(r.lost > 0 ? [`${r.label}: ${r.lost} broadcasts not received within the ACK timeout`] : []),
    ...(r.timedOut > 0 ? [`${r.label}: ${r.timedOut} of ${r.sent} updates without an ACK within the ACK timeout`] : []),
    ...(r.converged === false ? [`${r.label}: documents diverged`] : []),
    ...r.warnings.map(warning => `${r.label}: ${warning}`)
  ])
  const manyRuns = settings.runs > 1
  const redisLines = results.flatMap(r => r.redis ? [`${r.label}: ${formatNumber(r.redis.commandsPerUpdate, 2)} commands per stored update (${topCommands(r.redis.byCommand)})`] : [])
  return [
    `## Scale-out: processes sharing nothing, and sharing Redis (${startedAt})`,
    `${settings.editors} editors in rooms of ${settings.perRoom}, ${settings.rate} edits/s of ${settings.payload} characters each, no cursors; ` +
      `${settings.warmupMs / 1000} s warm-up, ${settings.durationMs / 1000} s measured per configuration. Latencies in ms. CPU: every server process and Redis, ` +
      'from /proc, per 1,000 deliveries counted by the server (`tandem_broadcast_deliveries_total`). Each × share-nothing divides a row\'s figure by that of ' +
      'the share-nothing processes of the same number (W embedded processes, no Redis, each room on one; for one process, the embedded one). ' +
      'Redis commands: every command Redis ran over the window (INFO commandstats, a script\'s own commands included) per update sent in it and acknowledged.' +
      (manyRuns ? ` Medians of ${settings.runs} runs, each run measuring every configuration in turn; the last column gives each run's CPU per 1,000 deliveries.` : ''),
    table(['Configuration', 'ACK p50', 'ACK p99', 'Broadcast p99', 'Deliveries/s', 'Server CPU', 'CPU ms per 1,000 deliveries', '× share-nothing',
      'ACK p50 × share-nothing', 'ACK p99 × share-nothing', 'Broadcast p99 × share-nothing', 'Redis commands per stored update', ...(manyRuns ? ['Each run'] : [])],
    results.map(r => [r.label, formatMs(r.ackP50Ms), formatMs(r.ackP99Ms), formatMs(r.broadcastP99Ms), formatNumber(r.deliveriesPerSecond), formatPercent(r.cpuPercent),
      formatNumber(r.cpuMsPer1000Deliveries, 1), formatRatio(r.timesShareNothing.cpuMsPer1000Deliveries), formatRatio(r.timesShareNothing.ackP50Ms),
      formatRatio(r.timesShareNothing.ackP99Ms), formatRatio(r.timesShareNothing.broadcastP99Ms), formatNumber(r.redis?.commandsPerUpdate, 2),
      ...(manyRuns ? [r.cpuMsPer1000DeliveriesPerRun.map(cpu => formatNumber(cpu, 1)).join(', ')] : [])])),
    ...(redisLines.length > 0 ? [redisLines.join('\n')] : []),
    ...(steps.length > 0 ? [steps.map(step => `${step.series}: ${step.to} vs ${step.from} processes, ${formatRatio(step.cpuPerDelivery)} the CPU per delivery.`).join('\n')] : []),
    ...(notes.length > 0 ? ['What limited these figures:\n' + notes.map(note => `- ${note}`).join('\n')] : [])
  ].join('\n\n') + '\n'
}

/** `xadd 1.00, evalsha 0.31, …`: the most called commands, per stored update. @param {Record<string, number>} byCommand */
export function topCommands (byCommand) {
  const entries = Object.entries(byCommand)
  const top = entries.slice(0, TOP_COMMANDS).map(([name, perUpdate]) => `${name} ${perUpdate.toFixed(2)}`)
  return [...top, ...(entries.length > TOP_COMMANDS ? ['…'] : [])].join(', ')
}

/** @param {string} text */
const oneLine = text => text.replace(/\s+/g, ' ').slice(0, 200)
