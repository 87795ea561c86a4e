// Runs the same load test several times and prints the median of each figure per level, so a
// comparison (single vs cluster, classic vs sharded adapter) rests on medians, not one noisy run.
//   node loadtest/bench/repeat.js --runs 3 -- --spawn cluster --editors 20 --rest-duration 0
// Environment variables pass through to a spawned server (REDIS_ADAPTER=classic, for example).
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { median } from './percentiles.js'

const CLI = fileURLToPath(new URL('../cli.js', import.meta.url))

/** Figures taken from each level of a report, with the path to each in report.json. */
const FIGURES = {
  'ACK p50': (/** @type {any} */ level) => level.ackMs?.p50,
  'ACK p99': (/** @type {any} */ level) => level.ackMs?.p99,
  'broadcast p50': (/** @type {any} */ level) => level.broadcast.latencyMs?.p50,
  'broadcast p99': (/** @type {any} */ level) => level.broadcast.latencyMs?.p99,
  'server update p99': (/** @type {any} */ level) => level.server?.updateMs?.p99,
  'server CPU %': (/** @type {any} */ level) => level.server?.cpuPercent,
  // Updates received by editors in the window (each update to each editor counts once, merged or not).
  'deliveries/s': (/** @type {any} */ level) => level.broadcast.received / level.windowSeconds,
  // Server CPU time per 1,000 of those deliveries (cursors ride along uncounted).
  'CPU ms per 1,000 deliveries': (/** @type {any} */ level) => level.server?.cpuPercent === undefined
    ? undefined
    : level.server.cpuPercent * 10 / (level.broadcast.received / level.windowSeconds) * 1000,
  lost: (/** @type {any} */ level) => level.broadcast.lost
}

const separator = process.argv.indexOf('--')
const own = process.argv.slice(2, separator === -1 ? undefined : separator)
const loadtestArgs = separator === -1 ? [] : process.argv.slice(separator + 1)
const runs = Number(own[own.indexOf('--runs') + 1] ?? 3) || 3

/** @type {any[][]} levels of each run */
const results = []
for (let run = 1; run <= runs; run++) {
  process.stderr.write(`run ${run}/${runs}: loadtest ${loadtestArgs.join(' ')}\n`)
  const { stdout } = await promisify(execFile)(process.execPath, [CLI, ...loadtestArgs, '--json'], { maxBuffer: 64 * 1024 * 1024 })
  const report = JSON.parse(stdout)
  results.push(report.levels)
  if (!report.levels.every((/** @type {any} */ level) => level.convergence.converged)) process.stderr.write('  a level did not converge\n')
}

const rows = results[0].map((/** @type {any} */ level, i) => {
  const cells = Object.values(FIGURES).map(read => median(results.map(levels => read(levels[i])).filter(v => v !== undefined)))
  return `| ${level.editors} | ${cells.map(v => (v === undefined ? '–' : Number(v).toFixed(2))).join(' | ')} |`
})
process.stdout.write(`Medians of ${runs} runs of: npm run loadtest -- ${loadtestArgs.join(' ')}\n\n`)
process.stdout.write(`| Editors | ${Object.keys(FIGURES).join(' | ')} |\n|${' --- |'.repeat(Object.keys(FIGURES).length + 1)}\n${rows.join('\n')}\n`)
