import { formatBytes, formatMs, formatNumber, formatPercent } from './format.js'
import { soakMarkdown } from './soak.js'
import { table } from './table.js'

// report.md: the verdict first, then one table per concern (updates, broadcasts, joins, server and
// generator, SLOs, REST), then the settings and the machine, so a reader sees the answer before
// the evidence. Every figure comes from report.json through the formats in format.js.

/** @param {import('../run.js').Report} report */
export function renderMarkdown (report) {
  const { levels, settings } = report
  const sections = [
    `# Tandem load test, ${report.startedAt}`,
    `**Verdict.** ${report.verdict.summary}`,
    `Target: ${report.target.description} at ${report.target.url}: ${describeServer(report.server)}. ${describeLoad(settings)}`,
    '![p50 and p99 of ACK and broadcast latency against editors](chart.svg)',
    ...(report.soak ? [soakMarkdown(report.soak)] : []),
    '## Updates (ACK latency, ms)',
    'Sent in the measured window; each ends acked, refused or timed out. ACK latency runs from emit to `{ ok: true }`, which the server sends once the update is stored.',
    table(['Editors', 'Rooms', 'Edits/s per editor', 'Sent', 'Acked', 'Timed out', 'Refused', 'p50', 'p90', 'p99', 'max'],
      levels.map(level => [level.editors, `${level.rooms} × ${level.perRoom}`, formatNumber(level.updates.achievedRate, 2), level.updates.sent, level.updates.acked,
        level.updates.timedOut, level.updates.refused, formatMs(level.ackMs?.p50), formatMs(level.ackMs?.p90), formatMs(level.ackMs?.p99), formatMs(level.ackMs?.max)])),
    '## Broadcasts (send → receipt at every other editor, ms)',
    'Expected: sends of the window × the other editors of their room. Latency is measured on the load generator\'s one clock.',
    table(['Editors', 'Expected', 'Received', 'Lost', 'p50', 'p90', 'p99', 'max', 'Cursor moves sent', 'Cursor moves received', 'Converged'],
      levels.map(level => [level.editors, level.broadcast.expected, level.broadcast.received, level.broadcast.lost,
        formatMs(level.broadcast.latencyMs?.p50), formatMs(level.broadcast.latencyMs?.p90), formatMs(level.broadcast.latencyMs?.p99), formatMs(level.broadcast.latencyMs?.max),
        level.awareness.sent, level.awareness.received, convergenceCell(level.convergence)])),
    '## Connect and sync (ms)',
    `Connect: socket open. Join: \`doc:join\` sent → document applied. Synced: connect start → the client's diff acknowledged. ${settings.joinStorm ? 'Join storm: every editor of a level at once.' : 'Connections spread over a short ramp.'}`,
    table(['Editors', 'Joined', 'Failed', 'Connect p50', 'Connect p99', 'Join p50', 'Join p99', 'Synced p50', 'Synced p99', 'Synced max'],
      levels.map(level => [level.editors, level.connect.joined, level.connect.failed, formatMs(level.connect.connectMs?.p50), formatMs(level.connect.connectMs?.p99),
        formatMs(level.connect.joinMs?.p50), formatMs(level.connect.joinMs?.p99), formatMs(level.connect.syncedMs?.p50), formatMs(level.connect.syncedMs?.p99), formatMs(level.connect.syncedMs?.max)])),
    '## Server and load generator',
    'Server figures come from its /metrics, scraped as the window opened and closed (summed across workers; event-loop lag is the worst worker). ' +
      'Server update time is estimated from the histogram buckets of `tandem_update_duration_seconds`. Event-loop lag is prom-client\'s, which includes its sampling interval ' +
      '(10 ms in server/metrics.js: an idle loop reads about 10 ms). CPU is a percentage of one core. Machine load is the 1-minute load average as the level ended, this run included.',
    table(['Editors', 'Server update p50 (ms)', 'Server update p99 (ms)', 'Event-loop lag p99 (ms)', 'Event-loop lag max (ms)', 'Server CPU', 'Server RSS (MB)', 'Deliveries/s', 'Generator CPU', 'Busiest generator thread', 'Generator threads', 'Machine load (1 min)'],
      levels.map(level => [level.editors, formatMs(level.server?.updateMs.p50), formatMs(level.server?.updateMs.p99), formatMs(level.server?.eventLoopLagMs.p99), formatMs(level.server?.eventLoopLagMs.max),
        formatPercent(level.serverProcess?.cpuPercent ?? level.server?.cpuPercent), formatNumber(level.server?.rssMB), formatNumber(level.server?.deliveriesPerSecond), formatPercent(level.generator.cpuPercent),
        formatPercent(level.generator.eventLoopUtilization * 100), level.workers, level.machineLoad.toFixed(2)])),
    ...warnings(levels),
    ...serverProcesses(report),
    '## SLOs',
    table(['Editors', 'Result', 'Why'], levels.map(level => [level.editors, level.slo.pass ? 'pass' : 'fail', level.slo.failures.join('; ') || '–'])),
    ...rest(report.rest),
    '## Server under test',
    table(['', ''], Object.entries(serverRows(report.server))),
    '## Settings',
    table(['Setting', 'Value'], Object.entries(settingsRows(settings, report))),
    '## Machine',
    table(['', ''], Object.entries({
      CPU: report.machine.cpu,
      Cores: report.machine.cores,
      Memory: `${report.machine.memoryGB} GB`,
      OS: report.machine.os,
      Node: report.machine.node,
      'Load average at start': report.machine.loadAverage.join(', ')
    })),
    ...credit(report.trace)
  ]
  return sections.join('\n\n') + '\n'
}

/** What was not reported shows as such, never as a guess. @param {unknown} value */
const known = value => value === null || value === undefined ? 'not known' : String(value)

/** @param {import('../server-info.js').ServerInfo | undefined} server */
function serverRows (server) {
  return {
    Version: known(server?.version),
    Commit: known(server?.commit),
    Storage: known(server?.storage),
    SYNC_WRITES: known(server?.syncWrites),
    Workers: known(server?.workers)
  }
}

/** @param {import('../server-info.js').ServerInfo | undefined} server */
function describeServer (server) {
  const parts = [`Tandem ${known(server?.version)}`]
  if (server?.commit) parts.push(`commit ${server.commit}`)
  parts.push(`${known(server?.storage)} storage`, `SYNC_WRITES=${known(server?.syncWrites)}`,
    server?.workers == null ? 'workers not known' : `${server.workers} worker${server.workers === 1 ? '' : 's'}`)
  return parts.join(', ')
}

/** @param {import('../run.js').Report['settings']} settings */
function describeLoad (settings) {
  const rooms = settings.perRoom === 'all' ? 'each level in one document' : `rooms of ${settings.perRoom}`
  const edits = settings.trace ? `replaying ${settings.trace}` : `${settings.payload}-character code edits`
  const cursors = settings.awarenessRate > 0 ? `, ${settings.awarenessRate} cursor moves/s` : ''
  return `Editors in ${rooms}, ${settings.rate} edits/s each (${edits}${cursors}), ${settings.warmupSeconds} s warm-up excluded, ${settings.durationSeconds} s measured per level.`
}

/** @param {import('../level-result.js').LevelResult[]} levels */
function warnings (levels) {
  const lines = levels.flatMap(level => level.generator.warnings.map(warning => `- ${level.editors} editors: ${warning}`))
  return lines.length === 0 ? [] : ['**Warnings**', lines.join('\n')]
}

/**
 * Where the server's CPU went and what a delivery cost it, when its processes run on this machine;
 * and how each room's editors were spread over the processes.
 * @param {import('../run.js').Report} report
 */
function serverProcesses ({ levels, target }) {
  const spread = target.spread ? [`Editors spread over the ${target.urls.length} processes by their slot in the room (${target.urls.map((url, i) => `process ${i}: ${url}`).join(', ')}): ${target.spread.map(s => s.text).join('. ')}.`] : []
  if (!levels.some(level => level.serverProcess)) return spread.length > 0 ? ['## Server processes', ...spread] : []
  return [
    '## Server processes',
    ...spread,
    'CPU (of one core) and RSS read from /proc over the window for every process of the server, Redis included, and summed: this is the Server CPU above. ' +
      'Each process\'s main thread is shown apart: a process is saturated when its main thread (a Node.js process\'s event loop) reaches 100 %, whatever its other threads add. ' +
      'Deliveries/s: updates relayed to editors, as the server\'s processes counted them (`tandem_broadcast_deliveries_total`), beside what the editors received.',
    table(['Editors', 'Server CPU', 'Server RSS (MB)', 'Deliveries/s (server)', 'Received/s (editors)', 'CPU ms per 1,000 deliveries', 'Each process'],
      levels.map(level => [level.editors, formatPercent(level.serverProcess?.cpuPercent), formatNumber(level.serverProcess?.rssMB), formatNumber(level.deliveries.perSecond),
        formatNumber(level.deliveries.receivedPerSecond), formatNumber(level.deliveries.cpuMsPer1000, 1),
        level.serverProcess?.processes.map(p => `${p.name} ${formatPercent(p.cpuPercent)} (main thread ${formatPercent(p.mainThreadCpuPercent)})`).join(', ') ?? '–']))
  ]
}

/** @param {import('../rest.js').RestResult[] | null} results */
function rest (results) {
  if (!results) return []
  const skipped = results.filter(r => r.skipped !== null).map(r => `\`${r.endpoint}\` was not measured: ${r.skipped}.`)
  return [
    '## REST API (autocannon, 10 connections)',
    'Latency at autocannon\'s 1 ms resolution. `content?at=` reads the text of the PUTs\' session as it was halfway through them, from its history.',
    table(['Endpoint', 'Requests', 'Requests/s', 'p50 (ms)', 'p90 (ms)', 'p99 (ms)', 'max (ms)', 'Errors', 'Non-2xx'],
      results.map(r => [`\`${r.endpoint}\``, r.skipped === null ? dash(r.requests) : 'skipped', formatNumber(r.requestsPerSecond),
        dash(r.latencyMs?.p50), dash(r.latencyMs?.p90), dash(r.latencyMs?.p99), dash(r.latencyMs?.max), dash(r.errors), dash(r.non2xx)])),
    ...(skipped.length > 0 ? [skipped.join(' ')] : [])
  ]
}

/** A figure that was not measured (a skipped endpoint's) shows as a dash. @param {number | null | undefined} value */
const dash = value => value === null || value === undefined ? '–' : value

/**
 * @param {import('../run.js').Report['settings']} settings
 * @param {import('../run.js').Report} report
 * @returns {Record<string, string | number>}
 */
function settingsRows (settings, report) {
  return {
    Levels: settings.editors.join(', '),
    ...(settings.soakSeconds === null ? {} : { 'Soak (s)': settings.soakSeconds }),
    'Editors per document': settings.perRoom,
    'Edits/s per editor': settings.rate,
    'Warm-up (s)': settings.warmupSeconds,
    'Measured window (s)': settings.durationSeconds,
    Edits: settings.trace ? `trace ${settings.trace}` : `synthetic, ${settings.payload} characters`,
    'Seeded document': settings.docSize > 0 ? formatBytes(settings.docSize) : 'a short stub per editor',
    'Cursor moves/s per editor': settings.awarenessRate,
    'Editors applying what they receive': ({ all: 'all', sample: 'one per room (the others time it and drop it)', none: 'none' })[/** @type {'all' | 'sample' | 'none'} */ (settings.apply)] ?? 'all',
    'ACK timeout (s)': settings.ackTimeoutSeconds,
    'Join storm': settings.joinStorm ? 'yes' : 'no',
    'Generator threads': settings.workers,
    'Editors\' client': settings.client === 'wire' ? 'wire: socket.io-client\'s bytes over a bare WebSocket' : 'socket.io-client',
    SLOs: `ACK p99 ≤ ${report.verdict.slo.ackP99Ms} ms, broadcast p99 ≤ ${report.verdict.slo.broadcastP99Ms} ms`,
    Command: `\`${settings.command}\``
  }
}

/** @param {import('../run.js').Report['trace']} trace */
function credit (trace) {
  if (!trace) return []
  return ['## Trace',
    `${trace.file}: ${trace.transactions} transactions, ${trace.patches} patches, ${trace.endLength} characters at the end. ${trace.credit}`]
}

/** @param {import('../convergence.js').Convergence} convergence */
function convergenceCell ({ converged, diverged, rooms }) {
  if (converged === null) return 'not checked'
  return converged ? 'yes' : `no (${diverged}/${rooms})`
}
