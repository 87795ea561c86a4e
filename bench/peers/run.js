// The same editor workload, on this machine and in this run, against Tandem and its peers:
// Hocuspocus, the y-websocket server, a naive Socket.IO relay and a bare ws relay (the floor). For
// each load, each system in turn is started alone on a free loopback port, loaded by the load test's
// own machinery (worker threads, send log, HDR histograms: loadtest/level.js) through a warm-up and a
// measured window, and stopped. Its server process's CPU and RSS come from /proc, the same way for
// every system.
import { TandemApi } from '../../loadtest/api.js'
import { NOTE_WAIT_MS, waitForQuiet } from '../quiet.js'
import { levelOptions } from '../workload-options.js'
import { runLevel } from '../../loadtest/level.js'
import { describeMachine } from '../../loadtest/machine.js'
import { spawnServer } from '../../loadtest/spawn.js'
import { tandemTarget } from '../../loadtest/target.js'
import { pinGenerator, pinServer } from './pin.js'
import { PEERS, startPeer } from './start.js'
import { peerTarget } from './target.js'

/** @typedef {{ editors: number, perRoom: number, label: string }} Load perRoom is Infinity for one document */

/**
 * @typedef {{ system: string, load: Load, error: string }
 *   | ({ system: string, load: Load, error: null } & ReturnType<typeof figuresOf>)} SystemResult
 * @typedef {SystemResult & { run: number }} PeerResult `run` counts from 1 (--runs)
 */

/**
 * The loads of a run: the one-document ones, then the rooms ones.
 * @param {Readonly<import('./options.js').PeerBenchOptions>} options
 * @returns {Load[]}
 */
export function loadsOf (options) {
  return [
    ...options.oneDoc.map(editors => ({ editors, perRoom: Infinity, label: `${editors} in 1 doc` })),
    ...options.rooms.map(editors => ({ editors, perRoom: options.perRoom, label: `${editors} in rooms of ${options.perRoom}` }))
  ]
}

/**
 * Runs every system at every load, `runs` times. Loads are the outer loop, so the systems compared
 * at one load ran minutes apart at most, under the same conditions on the machine.
 * @param {Readonly<import('./options.js').PeerBenchOptions>} options
 * @param {{ onProgress: (progress: import('../../loadtest/level.js').Progress) => void, onNote: (text: string) => void }} hooks
 */
export async function runPeerBench (options, hooks) {
  const startedAt = new Date().toISOString()
  const machine = describeMachine()
  /** @type {PeerResult[]} */
  const results = []
  if (options.pin) pinGenerator()
  for (const load of loadsOf(options)) {
    for (let run = 1; run <= options.runs; run++) {
      for (const system of runOrder(options.systems, run)) {
        hooks.onNote(`${system}, ${load.label}${options.runs > 1 ? `, run ${run} of ${options.runs}` : ''}`)
        const waitedMs = await waitForQuiet(options.quietWaitMs)
        if (waitedMs >= NOTE_WAIT_MS) hooks.onNote(`  waited ${(waitedMs / 1000).toFixed(0)} s for the machine to be idle`)
        const result = { run, ...await measure(system, load, options, hooks) }
        results.push(result)
        hooks.onNote(result.error !== null
          ? `  failed: ${result.error}`
          : `  broadcast p99 ${result.broadcastMs?.p99?.toFixed(2) ?? '–'} ms, ${Math.round(result.deliveriesPerSecond)} deliveries/s, ` +
            `${result.lost} lost, server CPU ${Math.round(result.server?.cpuPercent ?? NaN)}%, generator CPU ${Math.round(result.generator.cpuPercent)}%`)
      }
    }
  }
  return {
    tool: 'tandem-peer-bench',
    startedAt,
    finishedAt: new Date().toISOString(),
    machine,
    settings: {
      systems: options.systems,
      rate: options.rate,
      payload: options.payload,
      runs: options.runs,
      durationSeconds: options.durationMs / 1000,
      warmupSeconds: options.warmupMs / 1000,
      ackTimeoutSeconds: options.ackTimeoutMs / 1000,
      applyRemote: options.apply,
      pinned: options.pin,
      tandemClient: options.tandemClient,
      descriptions: Object.fromEntries(options.systems.map(system => [system, system === 'tandem' ? 'Tandem (node server/index.js, embedded LevelDB)' : PEERS[/** @type {keyof typeof PEERS} */ (system)]]))
    },
    results
  }
}

/**
 * The order of the systems in run `run` (from 1): as listed in odd runs, reversed in even ones, so
 * that over a pair of runs each system has run as often before the other as after it.
 * @param {readonly string[]} systems
 * @param {number} run
 */
function runOrder (systems, run) {
  return run % 2 === 1 ? [...systems] : [...systems].reverse()
}

/**
 * Starts `system`, runs one level against it, stops it.
 * @param {string} system
 * @param {Load} load
 * @param {Readonly<import('./options.js').PeerBenchOptions>} options
 * @param {Parameters<typeof runPeerBench>[1]} hooks
 * @returns {Promise<SystemResult>}
 */
async function measure (system, load, options, hooks) {
  let server
  try {
    server = await startSystem(system, options)
    if (options.pin) for (const { pid } of server.processes) pinServer(pid)
    /** @type {import('../../loadtest/protocols/index.js').Protocol} */
    const protocol = (await import(server.target.protocolModule)).protocol
    const level = await runLevel({
      options: levelOptions(options, { editors: load.editors, perRoom: load.perRoom, workers: options.workers }),
      target: server.target,
      trace: null,
      onProgress: hooks.onProgress,
      serverProcesses: server.processes,
      apply: options.apply ? 'all' : 'none'
    }, load.editors)
    return { system, load, error: null, ...figuresOf(level, protocol.ack) }
  } catch (err) {
    return { system, load, error: /** @type {Error} */ (err).message ?? String(err) }
  } finally {
    await server?.stop()
  }
}

/**
 * @param {string} system
 * @param {Readonly<import('./options.js').PeerBenchOptions>} options
 */
async function startSystem (system, options) {
  if (system === 'tandem') {
    const spawned = await spawnServer('single', { clusterWorkers: 1, apiKey: null })
    const target = tandemTarget(new TandemApi(spawned.url, null), { mintTokens: false, client: options.tandemClient })
    return { stop: spawned.stop, processes: spawned.pids, target }
  }
  const name = /** @type {import('./start.js').PeerName} */ (system)
  const peer = await startPeer(name)
  return { stop: peer.stop, processes: [{ name, pid: peer.pid }], target: peerTarget(name, peer.url) }
}

/**
 * What the comparison shows of a level.
 * @param {import('../../loadtest/level-result.js').LevelResult} level
 * @param {string | null} ackMeaning
 */
function figuresOf (level, ackMeaning) {
  const { broadcast, serverProcess } = level
  const deliveriesPerSecond = broadcast.received / level.windowSeconds
  const machine = serverProcess?.machineCpuPercent ?? null
  return {
    ackMeaning,
    ackMs: level.ackMs && { p50: level.ackMs.p50, p99: level.ackMs.p99, count: level.ackMs.count },
    broadcastMs: broadcast.latencyMs && { p50: broadcast.latencyMs.p50, p99: broadcast.latencyMs.p99, max: broadcast.latencyMs.max },
    sent: level.updates.sent,
    acked: level.updates.acked,
    expected: broadcast.expected,
    received: broadcast.received,
    lost: broadcast.lost,
    lostPercent: broadcast.expected > 0 ? broadcast.lost / broadcast.expected * 100 : null,
    deliveriesPerSecond,
    windowSeconds: level.windowSeconds,
    server: serverProcess && {
      cpuPercent: serverProcess.cpuPercent,
      mainThreadCpuPercent: serverProcess.busiestMainThreadPercent,
      cpuMs: serverProcess.cpuMs,
      cpuMsPer1000Deliveries: broadcast.received > 0 ? serverProcess.cpuMs / (broadcast.received / 1000) : null,
      rssMB: serverProcess.rssMB,
      peakRssMB: serverProcess.peakRssMB
    },
    // What the rest of the machine took meanwhile (another user's tests, say): CPU the server and
    // the generator could not have.
    otherCpuPercent: machine === null || !serverProcess ? null : Math.max(0, machine - serverProcess.cpuPercent - level.generator.cpuPercent),
    generator: {
      cpuPercent: level.generator.cpuPercent,
      busiestThreadPercent: level.generator.eventLoopUtilization * 100,
      threads: level.workers,
      bottleneck: level.generator.bottleneck,
      disturbed: level.generator.disturbed,
      warnings: level.generator.warnings
    },
    timedOut: level.updates.timedOut,
    joinFailed: level.connect.failed,
    disconnects: level.disconnects,
    converged: level.convergence.converged,
    machineLoad: level.machineLoad
  }
}
