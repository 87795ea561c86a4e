import { formatMs, formatNumber, formatPercent } from '../../loadtest/report/format.js'
import { table } from '../../loadtest/report/table.js'
import { medianOf } from '../../loadtest/runs.js'

// The peer comparison as markdown: one table of every system at every load (and run), the medians
// over the runs when there are several, then the ratios Tandem/peer per load, then what limited
// the figures. Every figure comes from the results that --json prints.

/** @typedef {import('./run.js').PeerResult} PeerResult */

// Other processes' CPU (% of one core) from which a row is noted as disturbed.
const OTHER_CPU_NOTE = 20

/** @param {Awaited<ReturnType<typeof import('./run.js').runPeerBench>>} bench */
export function renderPeerTables (bench) {
  const { results, settings } = bench
  const measured = /** @type {Extract<PeerResult, { error: null }>[]} */ (results.filter(result => result.error === null))
  const acks = [...new Map(measured.filter(r => r.ackMeaning).map(r => [r.system, r.ackMeaning])).entries()]
  const runs = settings.runs ?? 1
  // With several runs each row says which it belongs to, in a last column.
  const runCell = runs > 1 ? (/** @type {PeerResult} */ result) => [String(result.run)] : () => []
  return [
    `## Tandem and its peers, same workload, same machine (${bench.startedAt})`,
    `${settings.rate} edits/s per editor of ${settings.payload} characters, open loop, no presence; ${settings.warmupSeconds} s warm-up, ` +
      `${settings.durationSeconds} s measured per system and load; each system started alone on a free loopback port` +
      (settings.pinned ? ', on CPU 0 alone, the load generator on the other CPUs. ' : '. ') +
      (settings.applyRemote ? 'Editors apply every update they receive. ' : 'Editors time every update they receive and drop it (not applied; convergence not checked: --apply). ') +
      'Latencies in ms.',
    table(['System', 'Load', 'ACK p50', 'ACK p99', 'Broadcast p50', 'Broadcast p99', 'Deliveries/s', 'Lost', 'Server CPU', 'Main thread', 'CPU ms per 1,000 deliveries', 'Server RSS MB (peak)', 'Generator CPU', 'Other CPU', 'Converged', ...(runs > 1 ? ['Run'] : [])],
      results.map(result => result.error !== null
        ? [result.system, result.load.label, `failed: ${result.error.replace(/\s+/g, ' ').slice(0, 120)}`, '', '', '', '', '', '', '', '', '', '', '', '', ...runCell(result)]
        : [result.system, result.load.label, ...ackCells(result), formatMs(result.broadcastMs?.p50), formatMs(result.broadcastMs?.p99),
            formatNumber(result.deliveriesPerSecond), formatLost(result.lostPercent), formatPercent(result.server?.cpuPercent), formatPercent(result.server?.mainThreadCpuPercent), formatNumber(result.server?.cpuMsPer1000Deliveries, 1),
            formatNumber(result.server?.peakRssMB), formatPercent(result.generator.cpuPercent), formatPercent(result.otherCpuPercent),
            result.converged === null ? '–' : result.converged ? 'yes' : 'NO', ...runCell(result)])),
    'ACK: ' + (acks.length > 0 ? acks.map(([system, meaning]) => `${system}: ${meaning}`).join('; ') + '; ' : '') + 'the others acknowledge nothing (–). ' +
      'Broadcast: send → receipt at each other editor of the room, on the generator\'s one clock. Deliveries/s: broadcasts received by editors per second of the window ' +
      '(echoes of an editor\'s own update, which Hocuspocus and y-websocket also send, are not counted). Server CPU is a percentage of one core, read from /proc ' +
      'for the server\'s process over the window, like its RSS; Main thread, the part its main thread spent (the event loop, for the Node.js servers): ' +
      'a process is saturated when that reaches 100 %, whatever its other threads add. Generator CPU: the load generator (every editor, in this one process), of one core. ' +
      'Other CPU: what the rest of the machine used meanwhile (from /proc/stat), which neither the server nor the generator could have.',
    ...(runs > 1 ? medians(measured, runs) : []),
    ...ratios(measured, runs),
    ...limits(measured, runs)
  ].join('\n\n') + '\n'
}

/** @typedef {Extract<PeerResult, { error: null }>} Measured */

/**
 * Each system's median at each load over the runs in which it was measured.
 * @param {Measured[]} measured
 * @param {number} runs
 */
function medians (measured, runs) {
  const groups = [...groupBy(measured, result => `${result.load.label}\n${result.system}`).values()]
  /** @param {Measured[]} group @param {(result: Measured) => number | null | undefined} figure */
  const median = (group, figure) => medianOf(group.map(result => figure(result) ?? null))
  return [
    `### Medians over ${runs} runs`,
    'Each figure is the median of the runs in which the system was measured at that load; Lost sums them.',
    table(['System', 'Load', 'Runs', 'ACK p99', 'Broadcast p50', 'Broadcast p99', 'Deliveries/s', 'Lost', 'Server CPU', 'CPU ms per 1,000 deliveries', 'Server RSS MB (peak)', 'Generator CPU'],
      groups.map(group => [group[0].system, group[0].load.label, String(group.length),
        group[0].ackMeaning ? formatMs(median(group, result => result.ackMs?.p99)) : '–',
        formatMs(median(group, result => result.broadcastMs?.p50)), formatMs(median(group, result => result.broadcastMs?.p99)),
        formatNumber(median(group, result => result.deliveriesPerSecond)), String(group.reduce((sum, result) => sum + result.lost, 0)),
        formatPercent(median(group, result => result.server?.cpuPercent)), formatNumber(median(group, result => result.server?.cpuMsPer1000Deliveries), 1),
        formatNumber(median(group, result => result.server?.peakRssMB)), formatPercent(median(group, result => result.generator.cpuPercent))]))
  ]
}

/**
 * @param {Measured[]} measured
 * @param {number} runs
 */
function ratios (measured, runs) {
  const rows = ratioRows(measured)
  if (rows.length === 0) return []
  return [
    '### Ratios Tandem / peer',
    'Above 1: Tandem\'s figure is higher (slower latency, more deliveries, more CPU or memory) than the peer\'s at the same load.' +
      (runs > 1 ? ' Each cell is the median of the ratios of the runs, Tandem against the peer in the same run, with the lowest and highest in brackets.' : ''),
    table(['Load', 'Peer', 'Broadcast p50', 'Broadcast p99', 'Deliveries/s', 'Server CPU', 'CPU per 1,000 deliveries', 'RSS'], rows)
  ]
}

/** @type {((result: Measured) => number | null | undefined)[]} the figures of the ratio table, in its order */
const RATIO_FIGURES = [
  result => result.broadcastMs?.p50,
  result => result.broadcastMs?.p99,
  result => result.deliveriesPerSecond,
  result => result.server?.cpuPercent,
  result => result.server?.cpuMsPer1000Deliveries,
  result => result.server?.peakRssMB
]

/** @param {Measured[]} measured */
function ratioRows (measured) {
  const rows = []
  const byLoad = groupBy(measured, result => result.load.label)
  for (const [label, atLoad] of byLoad) {
    const tandem = atLoad.filter(result => result.system === 'tandem')
    if (tandem.length === 0) continue
    for (const [system, peer] of groupBy(atLoad.filter(result => result.system !== 'tandem'), result => result.system)) {
      // Paired by run: each ratio compares two systems measured minutes apart.
      const pairs = tandem.flatMap(t => peer.filter(p => p.run === t.run).map(p => [t, p]))
      if (pairs.length === 0) continue
      rows.push([label, system, ...RATIO_FIGURES.map(figure => ratioCell(pairs.map(([t, p]) => ratio(figure(t), figure(p)))))])
    }
  }
  return rows
}

/**
 * One pair's ratio as it is, several as their median with the lowest and highest (pairs without a
 * figure, such as a failed run's, are left out).
 * @param {(number | null)[]} ratios
 */
function ratioCell (ratios) {
  const known = /** @type {number[]} */ (ratios.filter(value => value !== null))
  if (known.length === 0) return '–'
  if (known.length === 1) return formatRatio(known[0])
  return `${formatRatio(/** @type {number} */ (medianOf(known)))} (${formatRatio(Math.min(...known))}–${formatRatio(Math.max(...known))})`
}

/**
 * @template T
 * @param {T[]} items
 * @param {(item: T) => string} keyOf
 * @returns {Map<string, T[]>} in the order each key first appears
 */
function groupBy (items, keyOf) {
  /** @type {Map<string, T[]>} */
  const groups = new Map()
  for (const item of items) {
    const key = keyOf(item)
    const group = groups.get(key)
    if (group) group.push(item)
    else groups.set(key, [item])
  }
  return groups
}

/**
 * @param {Measured[]} measured
 * @param {number} runs
 */
function limits (measured, runs) {
  const notes = measured.flatMap(result => {
    const where = `${result.system}, ${result.load.label}${runs > 1 ? `, run ${result.run}` : ''}`
    return [
      ...((result.otherCpuPercent ?? 0) >= OTHER_CPU_NOTE ? [`${where}: other processes used ${Math.round(/** @type {number} */ (result.otherCpuPercent))}% of a core during the window`] : []),
      ...result.generator.warnings.map(warning => `${where}: ${warning}`),
      ...(result.lost > 0 ? [`${where}: ${result.lost} of ${result.expected} broadcasts not received within the ACK timeout after the window`] : []),
      ...(result.joinFailed > 0 ? [`${where}: ${result.joinFailed} editors failed to join`] : []),
      ...(result.timedOut > 0 ? [`${where}: ${result.timedOut} of ${result.sent} updates got no ACK within the ACK timeout`] : []),
      ...(result.disconnects > 0 ? [`${where}: ${result.disconnects} editors were disconnected`] : [])
    ]
  })
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

/** @param {number | null | undefined} a @param {number | null | undefined} b @returns {number | null} */
function ratio (a, b) {
  if (a === null || a === undefined || b === null || b === undefined || b === 0) return null
  return a / b
}

/** @param {number} r */
function formatRatio (r) {
  return r >= 10 ? r.toFixed(0) : r.toFixed(2)
}

/** @param {number | null} percent */
function formatLost (percent) {
  if (percent === null) return '–'
  return percent === 0 ? '0' : `${percent < 0.01 ? '<0.01' : percent.toFixed(2)}%`
}
