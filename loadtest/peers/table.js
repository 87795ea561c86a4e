import { formatMs, formatNumber, formatPercent } from '../report/format.js'
import { table } from '../report/table.js'

// The peer comparison as markdown: one table of every system at every load, then the ratios
// Tandem/peer per load, then what limited the figures. Every figure comes from the results that
// --json prints.

/** @typedef {import('./run.js').PeerResult} PeerResult */

// Other processes' CPU (% of one core) from which a row is noted as disturbed.
const OTHER_CPU_NOTE = 20

/** @param {Awaited<ReturnType<typeof import('./run.js').runPeerBench>>} bench */
export function renderPeerTables (bench) {
  const { results, settings } = bench
  const measured = /** @type {Extract<PeerResult, { error: null }>[]} */ (results.filter(result => result.error === null))
  const acks = [...new Map(measured.filter(r => r.ackMeaning).map(r => [r.system, r.ackMeaning])).entries()]
  return [
    `## Tandem and its peers, same workload, same machine (${bench.startedAt})`,
    `${settings.rate} edits/s per editor of ${settings.payload} characters, open loop, no presence; ${settings.warmupSeconds} s warm-up, ` +
      `${settings.durationSeconds} s measured per system and load; each system started alone on a free loopback port` +
      (settings.pinned ? ', on CPU 0 alone, the load generator on the other CPUs. ' : '. ') +
      (settings.applyRemote ? 'Editors apply every update they receive. ' : 'Editors time every update they receive and drop it (not applied; convergence not checked: --apply). ') +
      'Latencies in ms.',
    table(['System', 'Load', 'ACK p50', 'ACK p99', 'Broadcast p50', 'Broadcast p99', 'Deliveries/s', 'Lost', 'Server CPU', 'Main thread', 'CPU ms per 1,000 deliveries', 'Server RSS MB (peak)', 'Generator CPU', 'Other CPU', 'Converged'],
      results.map(result => result.error !== null
        ? [result.system, result.load.label, `failed: ${result.error.replace(/\s+/g, ' ').slice(0, 120)}`, '', '', '', '', '', '', '', '', '', '', '', '']
        : [result.system, result.load.label, ...ackCells(result), formatMs(result.broadcastMs?.p50), formatMs(result.broadcastMs?.p99),
            formatNumber(result.deliveriesPerSecond), formatLost(result.lostPercent), formatPercent(result.server?.cpuPercent), formatPercent(result.server?.mainThreadCpuPercent), formatNumber(result.server?.cpuMsPer1000Deliveries, 1),
            formatNumber(result.server?.peakRssMB), formatPercent(result.generator.cpuPercent), formatPercent(result.otherCpuPercent),
            result.converged === null ? '–' : result.converged ? 'yes' : 'NO'])),
    'ACK: ' + (acks.length > 0 ? acks.map(([system, meaning]) => `${system}: ${meaning}`).join('; ') + '; ' : '') + 'the others acknowledge nothing (–). ' +
      'Broadcast: send → receipt at each other editor of the room, on the generator\'s one clock. Deliveries/s: broadcasts received by editors per second of the window ' +
      '(echoes of an editor\'s own update, which Hocuspocus and y-websocket also send, are not counted). Server CPU is a percentage of one core, read from /proc ' +
      'for the server\'s process over the window, like its RSS; Main thread, the part its main thread spent (the event loop, for the Node.js servers): ' +
      'a process is saturated when that reaches 100 %, whatever its other threads add. Generator CPU: the load generator (every editor, in this one process), of one core. ' +
      'Other CPU: what the rest of the machine used meanwhile (from /proc/stat), which neither the server nor the generator could have.',
    ...ratios(measured),
    ...limits(measured)
  ].join('\n\n') + '\n'
}

/** @param {Extract<PeerResult, { error: null }>[]} measured */
function ratios (measured) {
  const rows = ratioRows(measured)
  if (rows.length === 0) return []
  return [
    '### Ratios Tandem / peer',
    'Above 1: Tandem\'s figure is higher (slower latency, more deliveries, more CPU or memory) than the peer\'s at the same load.',
    table(['Load', 'Peer', 'Broadcast p50', 'Broadcast p99', 'Deliveries/s', 'Server CPU', 'CPU per 1,000 deliveries', 'RSS'], rows)
  ]
}

/** @param {Extract<PeerResult, { error: null }>[]} measured */
function ratioRows (measured) {
  const rows = []
  for (const tandem of measured.filter(result => result.system === 'tandem')) {
    for (const peer of measured.filter(result => result.system !== 'tandem' && result.load.label === tandem.load.label)) {
      rows.push([tandem.load.label, peer.system,
        ratio(tandem.broadcastMs?.p50, peer.broadcastMs?.p50), ratio(tandem.broadcastMs?.p99, peer.broadcastMs?.p99),
        ratio(tandem.deliveriesPerSecond, peer.deliveriesPerSecond), ratio(tandem.server?.cpuPercent, peer.server?.cpuPercent),
        ratio(tandem.server?.cpuMsPer1000Deliveries, peer.server?.cpuMsPer1000Deliveries), ratio(tandem.server?.peakRssMB, peer.server?.peakRssMB)])
    }
  }
  return rows
}

/** @param {Extract<PeerResult, { error: null }>[]} measured */
function limits (measured) {
  const notes = measured.flatMap(result => [
    ...((result.otherCpuPercent ?? 0) >= OTHER_CPU_NOTE ? [`${result.system}, ${result.load.label}: other processes used ${Math.round(/** @type {number} */ (result.otherCpuPercent))}% of a core during the window`] : []),
    ...result.generator.warnings.map(warning => `${result.system}, ${result.load.label}: ${warning}`),
    ...(result.lost > 0 ? [`${result.system}, ${result.load.label}: ${result.lost} of ${result.expected} broadcasts not received within the ACK timeout after the window`] : []),
    ...(result.joinFailed > 0 ? [`${result.system}, ${result.load.label}: ${result.joinFailed} editors failed to join`] : []),
    ...(result.timedOut > 0 ? [`${result.system}, ${result.load.label}: ${result.timedOut} of ${result.sent} updates got no ACK within the ACK timeout`] : []),
    ...(result.disconnects > 0 ? [`${result.system}, ${result.load.label}: ${result.disconnects} editors were disconnected`] : [])
  ])
  return notes.length === 0 ? [] : ['### What limited these figures', notes.map(note => `- ${note}`).join('\n')]
}

/**
 * ACK p50 and p99, saying so when ACKs timed out (they are then missing from the percentiles).
 * @param {Extract<PeerResult, { error: null }>} result
 */
function ackCells (result) {
  if (!result.ackMeaning) return ['–', '–']
  if (!result.ackMs) return result.sent > 0 ? ['timed out', 'timed out'] : ['–', '–']
  return [formatMs(result.ackMs.p50), formatMs(result.ackMs.p99) + (result.timedOut > 0 ? ` (${result.timedOut} timed out)` : '')]
}

/** @param {number | null | undefined} a @param {number | null | undefined} b */
function ratio (a, b) {
  if (a === null || a === undefined || b === null || b === undefined || b === 0) return '–'
  const r = a / b
  return r >= 10 ? r.toFixed(0) : r.toFixed(2)
}

/** @param {number | null} percent */
function formatLost (percent) {
  if (percent === null) return '–'
  return percent === 0 ? '0' : `${percent < 0.01 ? '<0.01' : percent.toFixed(2)}%`
}
