import { cpus, loadavg } from 'node:os'
import { assessGenerator } from './generator-health.js'
import { merge, summarize } from './histogram.js'
import { isLoopback } from './values.js'

// A level's figures, assembled from the generator threads' histograms and counters, the server's
// /metrics and the convergence check: the shape report.json holds per level.

/**
 * @param {object} input
 * @param {Readonly<import('./options.js').Options>} input.options
 * @param {number} input.editors
 * @param {number[]} input.roomSizes
 * @param {number} input.threads
 * @param {number} input.rampMs
 * @param {number} input.joined
 * @param {Record<string, number>} input.joinFailures
 * @param {number} input.expected broadcasts the sends of the window imply
 * @param {any[]} input.parts the threads' `collect` replies
 * @param {number} input.windowMs
 * @param {number} input.cpuPercent the generator process, of one core
 * @param {import('./server-stats.js').ServerStats | null} input.server
 * @param {import('./process-stats.js').ProcessStats | null} [input.serverProcess] from /proc, when the server runs here:
 *   every server process and Redis, summed
 * @param {import('./convergence.js').Convergence} input.convergence
 * @param {number} [input.cores] the machine's, server's and generator's together: not only those this process
 *   may run on, which `npm run peers -- --pin` narrows to the generator's (tests give their own)
 */
export function summarizeLevel ({ options, editors, roomSizes, threads, rampMs, joined, joinFailures, expected, parts, windowMs, cpuPercent, server, serverProcess = null, convergence, cores = cpus().length }) {
  const histogram = (/** @type {string} */ name) => summarize(merge(parts.map(part => part.histograms[name])))
  const count = (/** @type {string} */ name) => parts.reduce((total, part) => total + part.counts[name], 0)
  /** @type {Record<string, number>} */
  const refusedByCode = {}
  for (const part of parts) for (const [code, n] of Object.entries(part.refusedByCode)) refusedByCode[code] = (refusedByCode[code] ?? 0) + /** @type {number} */ (n)
  const sent = count('sent')
  const received = count('broadcastReceived')
  const scheduleLag = histogram('scheduleLag')
  const achievedRate = joined > 0 ? sent / joined / (windowMs / 1000) : 0
  const traceFinished = parts.reduce((total, part) => total + part.traceFinished, 0)
  const eventLoopUtilization = Math.max(...parts.map(part => part.eventLoopUtilization))
  return {
    editors,
    rooms: roomSizes.length,
    perRoom: Math.max(...roomSizes),
    workers: threads,
    windowSeconds: windowMs / 1000,
    connect: {
      attempted: editors,
      joined,
      failed: editors - joined,
      failures: joinFailures,
      rampMs,
      connectMs: histogram('connect'),
      joinMs: histogram('join'),
      syncedMs: histogram('synced')
    },
    updates: {
      sent,
      acked: count('acked'),
      refused: count('refused'),
      timedOut: count('timedOut'),
      refusedByCode,
      targetRate: options.rate,
      achievedRate
    },
    ackMs: histogram('ack'),
    broadcast: { expected, received, lost: expected - received, latencyMs: histogram('broadcast') },
    awareness: { sent: count('awarenessSent'), received: count('awarenessReceived') },
    disconnects: count('disconnects') + count('closedByServer'),
    trace: options.trace ? { editorsFinished: traceFinished, transactionsReplayed: parts.reduce((total, part) => total + part.traceReplayed, 0) } : null,
    server,
    serverProcess,
    deliveries: deliveryCost(server, serverProcess, received / (windowMs / 1000)),
    // Everything runnable on the machine, this run included: other work shows up here.
    machineLoad: Math.round(loadavg()[0] * 100) / 100,
    generator: {
      cpuPercent,
      eventLoopUtilization,
      scheduleLagMs: scheduleLag,
      ...assessGenerator({
        eventLoopUtilization,
        scheduleLagP99Ms: scheduleLag?.p99 ?? null,
        editIntervalMs: 1000 / options.rate,
        achievedRate,
        targetRate: options.rate,
        traceFinished: traceFinished > 0 && traceFinished === joined,
        generatorCpuPercent: cpuPercent,
        serverCpuPercent: serverProcess?.cpuPercent ?? server?.cpuPercent ?? null,
        cores,
        // With --spawn the URL is the default, on loopback, as the spawned server is.
        sharesMachine: options.url.every(isLoopback)
      })
    },
    convergence
  }
}

/**
 * What a delivery costs the server: deliveries per second as the server counted them (summed over
 * its processes, each counting what it relayed to its own editors), what the editors received, and
 * the CPU of every server process and Redis per 1,000 deliveries. Both the CPU and the count are
 * rates over nearly the same window, so their ratio does not depend on the window's exact edges.
 * @param {import('./server-stats.js').ServerStats | null} server
 * @param {import('./process-stats.js').ProcessStats | null} serverProcess
 * @param {number} receivedPerSecond by the editors, of the window's sends
 */
function deliveryCost (server, serverProcess, receivedPerSecond) {
  const perSecond = server?.deliveriesPerSecond ?? null
  return {
    perSecond,
    receivedPerSecond,
    // % of a core × 10 = CPU ms per second.
    cpuMsPer1000: serverProcess && perSecond ? serverProcess.cpuPercent * 10 / (perSecond / 1000) : null
  }
}

/** @typedef {ReturnType<typeof summarizeLevel>} LevelResult */
