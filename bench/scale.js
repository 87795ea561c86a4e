// `npm run bench -- scale [options]` (or `node bench/scale.js`): does another server process add
// capacity? The same workload runs against the embedded single process (LevelDB), then against W
// processes sharing one Redis for each W of --workers, each room's editors spread over the processes
// (loadtest/spread.js; or each room on one, `--placement rooms`), and with `--separate` W embedded
// processes that share nothing, each room on one: what W processes cost on this machine whatever
// they send each other. Each configuration is started alone (loadtest/spawn.js), loaded by the load
// test's own level (worker threads, HDR histograms: loadtest/level.js) and stopped. The cost compared
// is the CPU of every server process and Redis (/proc) per 1,000 deliveries the server counted
// (/metrics).
import { TandemApi } from '../loadtest/api.js'
import { runLevel } from '../loadtest/level.js'
import { describeMachine } from '../loadtest/machine.js'
import { OptionError } from '../loadtest/options.js'
import { createProgress } from '../loadtest/progress.js'
import { formatMs, formatNumber, formatPercent } from '../loadtest/report/format.js'
import { medianOf } from '../loadtest/runs.js'
import { table } from '../loadtest/report/table.js'
import { spawnServer } from '../loadtest/spawn.js'
import { separateTarget, tandemTarget } from '../loadtest/target.js'
import { NOTE_WAIT_MS, waitForQuiet } from './quiet.js'
import { parseScaleOptions, scaleHelpText } from './scale-options.js'
import { levelOptions } from './workload-options.js'

/** @typedef {{ label: string, mode: 'single' | 'cluster' | 'separate', processes: number }} Configuration */
/** @typedef {Awaited<ReturnType<typeof measure>>} ScaleResult */

/** @param {Readonly<import('./scale-options.js').ScaleBenchOptions>} options @returns {Configuration[]} */
export function configurationsOf (options) {
  return [
    { label: 'embedded (LevelDB), 1 process', mode: 'single', processes: 1 },
    ...(options.separate
      ? options.workers.filter(w => w > 1).map(w => ({ label: `embedded, ${w} separate processes, each room on one`, mode: /** @type {const} */ ('separate'), processes: w }))
      : []),
    ...options.workers.map(w => ({
      label: `Redis, ${w} process${w === 1 ? '' : 'es'}${w > 1 && options.placement === 'rooms' ? ', each room on one' : ''}`,
      mode: /** @type {const} */ ('cluster'),
      processes: w
    }))
  ]
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
  /** @type {ScaleResult[][]} per configuration, one result per run */
  const measured = configurations.map(() => [])
  for (let run = 1; run <= options.runs; run++) {
    for (const [i, configuration] of configurations.entries()) {
      hooks.onNote(options.runs > 1 ? `${configuration.label}, run ${run} of ${options.runs}` : configuration.label)
      const waitedMs = await waitForQuiet(options.quietWaitMs)
      if (waitedMs >= NOTE_WAIT_MS) hooks.onNote(`  waited ${(waitedMs / 1000).toFixed(0)} s for the machine to be idle`)
      const result = await measure(configuration, options, hooks)
      hooks.onNote(result.error ?? `  CPU ${formatNumber(result.cpuMsPer1000Deliveries, 1)} ms per 1,000 deliveries, ${formatNumber(result.deliveriesPerSecond)} deliveries/s`)
      measured[i].push(result)
    }
  }
  const results = measured.map(medianOfRuns)
  const embedded = results[0].cpuMsPer1000Deliveries
  const withRatio = results.map(result => ({ ...result, timesEmbedded: ratio(result.cpuMsPer1000Deliveries, embedded) }))
  const clustered = withRatio.slice(1).filter(result => result.error === null)
  const [fewer, more] = clustered.slice(-2)
  return {
    tool: 'tandem-scale-bench',
    startedAt,
    finishedAt: new Date().toISOString(),
    machine: describeMachine(),
    settings: { ...options, help: undefined },
    results: withRatio,
    // The two largest process counts: does the last step still pay for itself?
    step: more ? { from: fewer.processes, to: more.processes, cpuPerDelivery: ratio(more.cpuMsPer1000Deliveries, fewer.cpuMsPer1000Deliveries) } : null
  }
}

/**
 * One configuration's runs as one result: the median of each figure over the runs that did not
 * fail, every run's CPU per 1,000 deliveries beside it, and what was lost, timed out or failed in
 * any run. A single run is its own median.
 * @param {ScaleResult[]} runs
 */
function medianOfRuns (runs) {
  const measuredRuns = runs.filter(run => run.error === null)
  const median = (/** @type {(run: ScaleResult) => number | null} */ figure) => medianOf(measuredRuns.map(figure))
  const [first] = runs
  return {
    ...first,
    error: measuredRuns.length > 0 ? null : first.error,
    runErrors: runs.flatMap(run => run.error === null ? [] : [run.error]),
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
    warnings: [...new Set(runs.flatMap(run => run.warnings))]
  }
}

/** @param {number[]} values */
const sum = values => values.reduce((total, value) => total + value, 0)

/**
 * Starts a configuration, runs one level against it, stops it.
 * @param {Configuration} configuration
 * @param {Readonly<import('./scale-options.js').ScaleBenchOptions>} options
 * @param {Parameters<typeof runScaleBench>[1]} hooks
 */
async function measure (configuration, options, hooks) {
  const failed = (/** @type {unknown} */ err) => ({ ...configuration, error: /** @type {Error} */ (err).message ?? String(err), ...figuresOf(null) })
  let spawned
  try {
    spawned = configuration.mode === 'separate'
      ? await spawnSeparate(configuration.processes)
      : await spawnServer(configuration.mode, { clusterWorkers: configuration.processes, apiKey: null })
    const target = configuration.mode === 'separate'
      ? separateTarget(spawned.urls.map(url => new TandemApi(url, null)))
      : tandemTarget(new TandemApi(spawned.url, null), { mintTokens: false, urls: spawned.urls, placement: options.placement })
    const level = await runLevel({
      options: levelOptions(options, { editors: options.editors, perRoom: options.perRoom, workers: options.threads }),
      target,
      trace: null,
      onProgress: hooks.onProgress,
      serverProcesses: spawned.pids
    }, options.editors)
    return { ...configuration, error: null, ...figuresOf(level) }
  } catch (err) {
    return failed(err)
  } finally {
    await spawned?.stop()
  }
}

/**
 * Embedded single processes, each on its own port and data directory.
 * @param {number} count
 * @returns {Promise<{ url: string, urls: string[], pids: import('../loadtest/spawn.js').NamedPid[], stop: () => Promise<void> }>}
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

/** What the bench keeps of a level (null figures when it failed). @param {import('../loadtest/level-result.js').LevelResult | null} level */
function figuresOf (level) {
  return {
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
    warnings: level?.generator.warnings ?? []
  }
}

/** @param {number | null} a @param {number | null} b */
const ratio = (a, b) => a === null || b === null || b === 0 ? null : a / b

/** @param {number | null} r */
const formatRatio = r => r === null ? '–' : `${r.toFixed(2)}×`

/** The results as markdown: one table, the step between the two largest process counts, and what disturbed the figures. @param {Awaited<ReturnType<typeof runScaleBench>>} bench */
export function renderScaleTable ({ startedAt, settings, results, step }) {
  const notes = results.flatMap(r => [
    ...(r.error !== null ? [`${r.label}: failed: ${oneLine(r.error)}`] : r.runErrors.map(error => `${r.label}: a run failed: ${oneLine(error)}`)),
    ...(r.lost > 0 ? [`${r.label}: ${r.lost} broadcasts not received within the ACK timeout`] : []),
    ...(r.timedOut > 0 ? [`${r.label}: ${r.timedOut} of ${r.sent} updates without an ACK within the ACK timeout`] : []),
    ...(r.converged === false ? [`${r.label}: documents diverged`] : []),
    ...r.warnings.map(warning => `${r.label}: ${warning}`)
  ])
  const manyRuns = settings.runs > 1
  return [
    `## Scale-out: embedded against processes sharing Redis (${startedAt})`,
    `${settings.editors} editors in rooms of ${settings.perRoom}, ${settings.rate} edits/s of ${settings.payload} characters each, no cursors; ` +
      `${settings.warmupMs / 1000} s warm-up, ${settings.durationMs / 1000} s measured per configuration. Latencies in ms. CPU: every server process and Redis, ` +
      'from /proc, per 1,000 deliveries counted by the server (`tandem_broadcast_deliveries_total`); × embedded divides it by the embedded process\'s.' +
      (manyRuns ? ` Medians of ${settings.runs} runs, each run measuring every configuration in turn; the last column gives each run's CPU per 1,000 deliveries.` : ''),
    table(['Configuration', 'ACK p99', 'Broadcast p99', 'Deliveries/s', 'Server CPU', 'CPU ms per 1,000 deliveries', '× embedded', ...(manyRuns ? ['Each run'] : [])],
      results.map(r => [r.label, formatMs(r.ackP99Ms), formatMs(r.broadcastP99Ms), formatNumber(r.deliveriesPerSecond), formatPercent(r.cpuPercent),
        formatNumber(r.cpuMsPer1000Deliveries, 1), formatRatio(r.timesEmbedded),
        ...(manyRuns ? [r.cpuMsPer1000DeliveriesPerRun.map(cpu => formatNumber(cpu, 1)).join(', ')] : [])])),
    ...(step ? [`${step.to} vs ${step.from} processes: ${formatRatio(step.cpuPerDelivery)} the CPU per delivery.`] : []),
    ...(notes.length > 0 ? ['What limited these figures:\n' + notes.map(note => `- ${note}`).join('\n')] : [])
  ].join('\n\n') + '\n'
}

/** @param {string} text */
const oneLine = text => text.replace(/\s+/g, ' ').slice(0, 200)

/** The command line: parse, run with progress on stderr, print the table (or JSON) on stdout. @param {string[]} argv */
export async function main (argv) {
  let options
  try {
    options = parseScaleOptions(argv)
  } catch (err) {
    if (!(err instanceof OptionError)) throw err
    process.stderr.write(`bench scale: ${err.message}\nRun with --help for the options.\n`)
    process.exitCode = 2
    return
  }
  if (options.help) {
    process.stdout.write(scaleHelpText())
    return
  }
  const progress = createProgress(process.stderr, { levels: configurationsOf(options).length * options.runs })
  const bench = await runScaleBench(options, { onProgress: progress.update, onNote: progress.note })
  progress.done()
  process.stdout.write(options.json ? JSON.stringify(bench, null, 2) + '\n' : '\n' + renderScaleTable(bench))
}

if (import.meta.url === `file://${process.argv[1]}`) await main(process.argv.slice(2))
