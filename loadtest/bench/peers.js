// `npm run bench -- --peers-only [options]` (or `node loadtest/bench/peers.js`): the same editor
// workload, on this machine and in this run, against Tandem and its peers: Hocuspocus, the
// y-websocket server, a naive Socket.IO relay and a bare ws relay (the floor). For each load, each
// system in turn is started alone on a free loopback port, loaded by the load test's own machinery
// (worker threads, send log, HDR histograms: level.js) through a warm-up and a measured window, and
// stopped. Its server process's CPU and RSS come from /proc, the same way for every system.
import { mkdir, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { TandemApi } from '../api.js'
import { runLevel } from '../level.js'
import { describeMachine } from '../machine.js'
import { OptionError, parseOptions } from '../options.js'
import { PEERS, startPeer } from '../peers/start.js'
import { createProgress } from '../progress.js'
import { loadProtocol } from '../protocols/index.js'
import { spawnServer } from '../spawn.js'
import { peerTarget, tandemTarget } from '../target.js'
import { parsePeerOptions, peerHelpText } from './peers-options.js'
import { renderPeerTables } from './peers-table.js'
import { NOTE_WAIT_MS, waitForQuiet } from './quiet.js'

/** @typedef {{ editors: number, perRoom: number, label: string }} Load perRoom is Infinity for one document */

/**
 * @typedef {{ system: string, load: Load, error: string }
 *   | ({ system: string, load: Load, error: null } & ReturnType<typeof figuresOf>)} PeerResult
 */

/**
 * The loads of a run: the one-document ones, then the rooms ones.
 * @param {Readonly<import('./peers-options.js').PeerBenchOptions>} options
 * @returns {Load[]}
 */
export function loadsOf (options) {
  return [
    ...options.oneDoc.map(editors => ({ editors, perRoom: Infinity, label: `${editors} in 1 doc` })),
    ...options.rooms.map(editors => ({ editors, perRoom: options.perRoom, label: `${editors} in rooms of ${options.perRoom}` }))
  ]
}

/**
 * Runs every system at every load. Loads are the outer loop, so the systems compared at one load
 * ran minutes apart at most, under the same conditions on the machine.
 * @param {Readonly<import('./peers-options.js').PeerBenchOptions>} options
 * @param {{ onProgress: (progress: import('../level.js').Progress) => void, onNote: (text: string) => void }} hooks
 */
export async function runPeerBench (options, hooks) {
  const startedAt = new Date().toISOString()
  const machine = describeMachine()
  /** @type {PeerResult[]} */
  const results = []
  for (const load of loadsOf(options)) {
    for (const system of options.systems) {
      hooks.onNote(`${system}, ${load.label}`)
      const waitedMs = await waitForQuiet(options.quietWaitMs)
      if (waitedMs >= NOTE_WAIT_MS) hooks.onNote(`  waited ${(waitedMs / 1000).toFixed(0)} s for the machine to be idle`)
      const result = await measure(system, load, options, hooks)
      results.push(result)
      hooks.onNote(result.error !== null
        ? `  failed: ${result.error}`
        : `  broadcast p99 ${result.broadcastMs?.p99?.toFixed(2) ?? '–'} ms, ${Math.round(result.deliveriesPerSecond)} deliveries/s, ` +
          `${result.lost} lost, server CPU ${Math.round(result.server?.cpuPercent ?? NaN)}%, generator CPU ${Math.round(result.generator.cpuPercent)}%`)
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
      durationSeconds: options.durationMs / 1000,
      warmupSeconds: options.warmupMs / 1000,
      ackTimeoutSeconds: options.ackTimeoutMs / 1000,
      applyRemote: options.apply,
      descriptions: Object.fromEntries(options.systems.map(system => [system, system === 'tandem' ? 'Tandem (node server/index.js, embedded LevelDB)' : PEERS[/** @type {keyof typeof PEERS} */ (system)]]))
    },
    results
  }
}

/**
 * Starts `system`, runs one level against it, stops it.
 * @param {string} system
 * @param {Load} load
 * @param {Readonly<import('./peers-options.js').PeerBenchOptions>} options
 * @param {Parameters<typeof runPeerBench>[1]} hooks
 * @returns {Promise<PeerResult>}
 */
async function measure (system, load, options, hooks) {
  const protocol = await loadProtocol(system)
  let server
  try {
    server = await startSystem(system)
    const level = await runLevel({
      options: levelOptions(options, load),
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

/** @param {string} system */
async function startSystem (system) {
  if (system === 'tandem') {
    const spawned = await spawnServer('single', { clusterWorkers: 1, apiKey: null })
    return { stop: spawned.stop, processes: spawned.pids, target: tandemTarget(new TandemApi(spawned.url, null), { mintTokens: false }) }
  }
  const peer = await startPeer(/** @type {keyof typeof PEERS} */ (system))
  return { stop: peer.stop, processes: [{ name: system, pid: peer.pid }], target: peerTarget(system, peer.url) }
}

/**
 * The load test's options for one level of the comparison: no presence, no REST, no trace.
 * @param {Readonly<import('./peers-options.js').PeerBenchOptions>} options
 * @param {Load} load
 */
function levelOptions (options, load) {
  return parseOptions([
    '--editors', String(load.editors),
    '--per-room', load.perRoom === Infinity ? 'all' : String(load.perRoom),
    '--rate', String(options.rate),
    '--payload', String(options.payload),
    '--duration', `${options.durationMs}ms`,
    '--warmup', `${options.warmupMs}ms`,
    '--ack-timeout', `${options.ackTimeoutMs}ms`,
    '--awareness-rate', '0',
    '--workers', options.workers === 0 ? 'auto' : String(options.workers),
    '--rest-duration', '0'
  ])
}

/**
 * What the comparison shows of a level.
 * @param {import('../level-result.js').LevelResult} level
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

/**
 * The command line: parse, run with progress on stderr, print tables (or JSON) on stdout.
 * @param {string[]} argv
 */
export async function main (argv) {
  let options
  try {
    options = parsePeerOptions(argv)
  } catch (err) {
    if (!(err instanceof OptionError)) throw err
    process.stderr.write(`bench: ${err.message}\nRun with --help for the options.\n`)
    process.exitCode = 2
    return
  }
  if (options.help) {
    process.stdout.write(peerHelpText())
    return
  }
  const progress = createProgress(process.stderr, { levels: loadsOf(options).length * options.systems.length })
  const bench = await runPeerBench(options, { onProgress: progress.update, onNote: progress.note })
  progress.done()
  const json = JSON.stringify(bench, null, 2) + '\n'
  const markdown = renderPeerTables(bench)
  const dir = resolve(options.out, `peers-${bench.startedAt.replace(/[:.]/g, '-')}`)
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, 'peers.json'), json)
  await writeFile(join(dir, 'peers.md'), markdown)
  process.stdout.write(options.json ? json : '\n' + markdown)
  process.stderr.write(`Results written to ${dir}\n`)
}

if (import.meta.url === `file://${process.argv[1]}`) await main(process.argv.slice(2))
