// `npm run bench -- scale [options]` (or `node bench/scale.js`): does another server process add
// capacity? The same workload runs against the embedded single process (LevelDB), then for each W of
// --workers against W embedded processes that share nothing, each room on one (what W processes cost
// on this machine whatever they send each other), and against W processes sharing one Redis, each
// room on one process and each room spread over them (loadtest/spread.js). Each configuration is
// started alone (loadtest/spawn.js), loaded by the load test's own level (worker threads, HDR
// histograms: loadtest/level.js) and stopped. The cost compared is the CPU of every server process
// and Redis (/proc) per 1,000 deliveries the server counted (/metrics); with Redis, also the commands
// Redis ran per update stored (INFO commandstats, bench/redis-commands.js).
import { TandemApi } from '../loadtest/api.js'
import { runLevel } from '../loadtest/level.js'
import { describeMachine } from '../loadtest/machine.js'
import { optionsOrHelp } from '../loadtest/options.js'
import { createProgress } from '../loadtest/progress.js'
import { formatNumber } from '../loadtest/report/format.js'
import { spawnServer } from '../loadtest/spawn.js'
import { separateTarget, tandemTarget } from '../loadtest/target.js'
import { NOTE_WAIT_MS, waitForQuiet } from './quiet.js'
import { commandCounter } from './redis-commands.js'
import { SHARE_NOTHING, compare, figuresOf, medianOfRuns, stepsOf } from './scale-results.js'
import { parseScaleOptions, scaleHelpText } from './scale-options.js'
import { renderScaleTable } from './scale-table.js'
import { levelOptions } from './workload-options.js'

/** @typedef {import('./scale-results.js').Configuration} Configuration */

const SPREAD_WORDS = Object.freeze({ rooms: 'each room on one', editors: 'spread' })

/**
 * The embedded single process, then for each W the share-nothing processes and the Redis ones.
 * @param {Readonly<import('./scale-options.js').ScaleBenchOptions>} options
 * @returns {Configuration[]}
 */
export function configurationsOf (options) {
  return [
    { label: 'embedded, 1 process', series: 'embedded', mode: 'single', placement: null, processes: 1, spacingMs: null },
    ...options.workers.flatMap(w => configurationsAt(w, options))
  ]
}

/** @param {number} w @param {Readonly<import('./scale-options.js').ScaleBenchOptions>} options @returns {Configuration[]} */
function configurationsAt (w, options) {
  const spacings = options.spacing.length > 0 ? options.spacing : [null]
  /** @param {number | null} spacingMs */
  const spaced = spacingMs => spacingMs === null ? '' : `, spacing ${spacingMs} ms`
  // One process sharing nothing is the embedded one, and one Redis process the same under every placement.
  if (w === 1) return spacings.map(spacingMs => ({ label: `Redis, 1 process${spaced(spacingMs)}`, series: `Redis${spaced(spacingMs)}`, mode: 'cluster', placement: null, processes: 1, spacingMs }))
  /** @type {Configuration[]} */
  const shareNothing = options.shareNothing ? [{ label: `${SHARE_NOTHING}, ${w} processes`, series: SHARE_NOTHING, mode: SHARE_NOTHING, placement: 'rooms', processes: w, spacingMs: null }] : []
  return [...shareNothing, ...spacings.flatMap(spacingMs => options.placement.map(placement => /** @type {Configuration} */ ({
    label: `Redis, ${w} processes, ${SPREAD_WORDS[placement]}${spaced(spacingMs)}`,
    series: `Redis, ${SPREAD_WORDS[placement]}${spaced(spacingMs)}`,
    mode: 'cluster',
    placement,
    processes: w,
    spacingMs
  })))]
}

/**
 * @param {Readonly<import('./scale-options.js').ScaleBenchOptions>} options
 * @param {{ onProgress: (progress: import('../loadtest/level.js').Progress) => void, onNote: (text: string) => void }} hooks
 */
export async function runScaleBench (options, hooks) {
  const startedAt = new Date().toISOString()
  const configurations = configurationsOf(options)
  // Every configuration once per run, in turn: a drift of the machine's speed then reaches all of
  // them alike, where measuring one configuration's runs back to back would put it on one of them.
  /** @type {import('./scale-results.js').ScaleRun[][]} per configuration, one result per run */
  const measured = configurations.map(() => [])
  for (let run = 1; run <= options.runs; run++) {
    for (const [i, configuration] of configurations.entries()) {
      hooks.onNote(options.runs > 1 ? `${configuration.label}, run ${run} of ${options.runs}` : configuration.label)
      const waitedMs = await waitForQuiet(options.quietWaitMs)
      if (waitedMs >= NOTE_WAIT_MS) hooks.onNote(`  waited ${(waitedMs / 1000).toFixed(0)} s for the machine to be idle`)
      const result = await measure(configuration, options, hooks)
      const redis = result.redis ? `, ${formatNumber(result.redis.commandsPerUpdate, 2)} Redis commands per stored update` : ''
      hooks.onNote(result.error ?? `  CPU ${formatNumber(result.cpuMsPer1000Deliveries, 1)} ms per 1,000 deliveries, ${formatNumber(result.deliveriesPerSecond)} deliveries/s${redis}`)
      measured[i].push(result)
    }
  }
  const results = compare(measured.map(medianOfRuns))
  return {
    tool: 'tandem-scale-bench',
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: describeMachine(),
    settings: { ...options, help: undefined },
    results,
    steps: stepsOf(results)
  }
}

/**
 * Starts a configuration, runs one level against it, stops it. With Redis, the commands it ran are
 * read at the edges of the measured window.
 * @param {Configuration} configuration
 * @param {Readonly<import('./scale-options.js').ScaleBenchOptions>} options
 * @param {Parameters<typeof runScaleBench>[1]} hooks
 * @returns {Promise<import('./scale-results.js').ScaleRun>}
 */
async function measure (configuration, options, hooks) {
  let spawned, counter
  try {
    spawned = configuration.mode === SHARE_NOTHING
      ? await spawnSeparate(configuration.processes)
      : await spawnServer(configuration.mode, { clusterWorkers: configuration.processes, apiKey: null, ...configuration.spacingMs === null ? {} : { appendSpacingMs: configuration.spacingMs } })
    const target = configuration.mode === SHARE_NOTHING
      ? separateTarget(spawned.urls.map(url => new TandemApi(url, null)))
      : tandemTarget(new TandemApi(spawned.url, null), { mintTokens: false, urls: spawned.urls, placement: configuration.placement ?? 'editors' })
    counter = spawned.redisUrl ? await commandCounter(spawned.redisUrl) : null
    const level = await runLevel({
      options: levelOptions(options, { editors: options.editors, perRoom: options.perRoom, workers: options.threads }),
      target,
      trace: null,
      onProgress: hooks.onProgress,
      serverProcesses: spawned.pids,
      onWindow: counter?.onWindow
    }, options.editors)
    return { ...configuration, error: null, ...figuresOf(level, counter?.calls) }
  } catch (err) {
    return { ...configuration, error: /** @type {Error} */ (err).message ?? String(err), ...figuresOf(null) }
  } finally {
    await counter?.close()
    await spawned?.stop()
  }
}

/**
 * Embedded single processes, each on its own port and data directory.
 * @param {number} count
 * @returns {Promise<Pick<import('../loadtest/spawn.js').SpawnedServer, 'url' | 'urls' | 'pids' | 'redisUrl' | 'stop'>>}
 */
async function spawnSeparate (count) {
  /** @type {Awaited<ReturnType<typeof spawnServer>>[]} */
  const servers = []
  const stop = async () => { await Promise.all(servers.map(server => server.stop())) }
  try {
    for (let i = 0; i < count; i++) servers.push(await spawnServer('single', { clusterWorkers: 1, apiKey: null }))
  } catch (err) {
    await stop()
    throw err
  }
  return { url: servers[0].url, urls: servers.map(server => server.url), pids: servers.map((server, i) => ({ name: `server ${i}`, pid: server.pids[0].pid })), stop }
}

/** The command line: parse, run with progress on stderr, print the table (or JSON) on stdout. @param {string[]} argv */
export async function main (argv) {
  const options = optionsOrHelp('bench scale', argv, { parse: parseScaleOptions, helpText: scaleHelpText })
  if (!options) return
  const progress = createProgress(process.stderr, { levels: configurationsOf(options).length * options.runs })
  const bench = await runScaleBench(options, { onProgress: progress.update, onNote: progress.note })
  progress.done()
  process.stdout.write(options.json ? JSON.stringify(bench, null, 2) + '\n' : '\n' + renderScaleTable(bench))
}

if (import.meta.url === `file://${process.argv[1]}`) await main(process.argv.slice(2))
