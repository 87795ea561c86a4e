import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { before, describe, it } from 'node:test'
import { parseScaleOptions } from '../bench/scale-options.js'
import { renderScaleTable } from '../bench/scale.js'
import { OptionError } from '../loadtest/options.js'
import { formatMs, formatNumber, formatPercent } from '../loadtest/report/format.js'
import { tableAfter } from './helpers/markdown.js'
import { missing } from './helpers/processes.js'

const BENCH = new URL('../bench/index.js', import.meta.url).pathname
const run = promisify(execFile)

describe('npm run bench -- scale: a tiny run against the embedded process, then 1 and 2 processes sharing Redis', { skip: missing('redis-server') }, () => {
  /** @type {any} */
  let bench

  before(async () => {
    const { stdout } = await run(process.execPath, [BENCH, 'scale', '--workers', '2,1', '--editors', '10', '--rate', '10', '--duration', '2s', '--warmup', '1s',
      '--quiet-wait', '0', '--json'], { timeout: 120000 })
    bench = JSON.parse(stdout)
  })

  it('measures each configuration in turn, embedded first, with nothing lost', () => {
    assert.deepEqual(bench.results.map((/** @type {any} */ r) => r.label), ['embedded (LevelDB), 1 process', 'Redis, 1 process', 'Redis, 2 processes'])
    for (const result of bench.results) {
      assert.equal(result.error, null, result.label)
      assert.ok(result.sent > 0 && result.deliveriesPerSecond > 0 && result.cpuMsPer1000Deliveries > 0, result.label)
      assert.equal(result.lost + result.timedOut, 0, result.label)
      assert.equal(result.converged, true, result.label)
    }
    assert.deepEqual(bench.results[0].perProcess.map((/** @type {any} */ p) => p.name), ['server'])
    assert.deepEqual(bench.results[2].perProcess.map((/** @type {any} */ p) => p.name), ['server 0', 'server 1', 'redis-server'])
  })

  it('derives the CPU per delivery and every ratio from the measured CPU and delivery counts', () => {
    const [embedded, one, two] = bench.results
    for (const result of bench.results) {
      const cpu = result.perProcess.reduce((/** @type {number} */ total, /** @type {any} */ p) => total + p.cpuPercent, 0)
      assert.ok(Math.abs(result.cpuPercent - cpu) < 1e-9, `${result.label}: the CPU is the sum over its processes`)
      assert.ok(Math.abs(result.cpuMsPer1000Deliveries - result.cpuPercent * 10 / (result.deliveriesPerSecond / 1000)) < 1e-9, result.label)
      assert.ok(Math.abs(result.timesEmbedded - result.cpuMsPer1000Deliveries / embedded.cpuMsPer1000Deliveries) < 1e-12, result.label)
    }
    assert.equal(bench.step.from, 1)
    assert.equal(bench.step.to, 2)
    assert.ok(Math.abs(bench.step.cpuPerDelivery - two.cpuMsPer1000Deliveries / one.cpuMsPer1000Deliveries) < 1e-12)
  })

  it('prints one table, a row per configuration, and the step between the two largest process counts', () => {
    const markdown = renderScaleTable(bench)
    const rows = tableAfter(markdown, '## Scale-out')
    assert.deepEqual(rows, bench.results.map((/** @type {any} */ r) => [r.label, formatMs(r.ackP99Ms), formatMs(r.broadcastP99Ms), formatNumber(r.deliveriesPerSecond),
      formatPercent(r.cpuPercent), formatNumber(r.cpuMsPer1000Deliveries, 1), `${r.timesEmbedded.toFixed(2)}×`]))
    assert.equal(rows[0][6], '1.00×')
    assert.ok(markdown.includes(`2 vs 1 processes: ${bench.step.cpuPerDelivery.toFixed(2)}× the CPU per delivery.`))
  })
})

describe('npm run bench -- scale --runs 2: every configuration measured twice, in turn, and given as medians', { skip: missing('redis-server') }, () => {
  /** @type {any} */
  let bench

  before(async () => {
    const { stdout } = await run(process.execPath, [BENCH, 'scale', '--runs', '2', '--workers', '1', '--editors', '10', '--rate', '10', '--duration', '1s', '--warmup', '1s',
      '--quiet-wait', '0', '--json'], { timeout: 120000 })
    bench = JSON.parse(stdout)
  })

  it('keeps each run\'s CPU per delivery and gives their median, the ratio taken between medians', () => {
    assert.deepEqual(bench.results.map((/** @type {any} */ r) => r.label), ['embedded (LevelDB), 1 process', 'Redis, 1 process'])
    for (const result of bench.results) {
      const [first, second] = result.cpuMsPer1000DeliveriesPerRun
      assert.equal(result.cpuMsPer1000DeliveriesPerRun.length, 2, result.label)
      assert.ok(first > 0 && second > 0, result.label)
      assert.ok(Math.abs(result.cpuMsPer1000Deliveries - (first + second) / 2) < 1e-9, `${result.label}: the median of two runs is their mean`)
      assert.equal(result.lost + result.timedOut, 0, result.label)
      assert.equal(result.converged, true, result.label)
    }
    const [embedded, one] = bench.results
    assert.ok(Math.abs(one.timesEmbedded - one.cpuMsPer1000Deliveries / embedded.cpuMsPer1000Deliveries) < 1e-12)
  })

  it('prints each run\'s figure beside the medians', () => {
    const markdown = renderScaleTable(bench)
    assert.ok(markdown.includes('Medians of 2 runs'))
    const rows = tableAfter(markdown, '## Scale-out')
    assert.deepEqual(rows.map(row => row[7]), bench.results.map((/** @type {any} */ r) => r.cpuMsPer1000DeliveriesPerRun.map((/** @type {number} */ cpu) => formatNumber(cpu, 1)).join(', ')))
  })
})

describe('npm run bench -- scale --separate --placement rooms: each room on one process, with Redis and with nothing shared', { skip: missing('redis-server') }, () => {
  /** @type {any} */
  let bench

  before(async () => {
    const { stdout } = await run(process.execPath, [BENCH, 'scale', '--workers', '2', '--separate', '--placement', 'rooms', '--editors', '20', '--rate', '10',
      '--duration', '1s', '--warmup', '1s', '--quiet-wait', '0', '--json'], { timeout: 120000 })
    bench = JSON.parse(stdout)
  })

  it('runs two embedded processes that share nothing, each room\'s editors on the process that holds its session', () => {
    assert.deepEqual(bench.results.map((/** @type {any} */ r) => r.label),
      ['embedded (LevelDB), 1 process', 'embedded, 2 separate processes, each room on one', 'Redis, 2 processes, each room on one'])
    for (const result of bench.results) {
      assert.equal(result.error, null, result.label)
      assert.equal(result.lost + result.timedOut, 0, result.label)
      assert.equal(result.converged, true, result.label)
    }
    // A separate process knows only the sessions created on it: an editor sent to the other could
    // not join, and the run would fail. Both processes carry load, and their deliveries add up.
    const separate = bench.results[1]
    assert.deepEqual(separate.perProcess.map((/** @type {any} */ p) => p.name), ['server 0', 'server 1'])
    for (const { cpuPercent } of separate.perProcess) assert.ok(cpuPercent > 0)
    // One server's alone would be half; a busy machine moves a one-second run by a fifth or more.
    const off = Math.abs(separate.deliveriesPerSecond - bench.results[0].deliveriesPerSecond) / bench.results[0].deliveriesPerSecond
    assert.ok(off < 0.35, `both servers' deliveries are counted (${Math.round(off * 100)} % off the single process's)`)
  })
})

describe('npm run bench -- scale: options', () => {
  it('defaults to 300 editors in rooms of 5 at 5 edits/s of 8 characters, against 1, 2 and 4 processes, 15 s after 5 s, one run', () => {
    const options = parseScaleOptions([])
    assert.deepEqual(options.workers, [1, 2, 4])
    assert.equal(options.editors, 300)
    assert.equal(options.perRoom, 5)
    assert.equal(options.rate, 5)
    assert.equal(options.payload, 8)
    assert.equal(options.durationMs, 15000)
    assert.equal(options.warmupMs, 5000)
    assert.equal(options.runs, 1)
    assert.equal(options.placement, 'editors')
    assert.equal(options.separate, false)
    assert.ok(Object.isFrozen(options))
  })

  it('takes the process counts in ascending order, once each, and names the flag of a bad value or run count', () => {
    assert.deepEqual(parseScaleOptions(['--workers', '4,2,4']).workers, [2, 4])
    assert.throws(() => parseScaleOptions(['--workers', '0']), (err) => err instanceof OptionError && /--workers "0"/.test(err.message))
    assert.throws(() => parseScaleOptions(['--runs', '0']), (err) => err instanceof OptionError && /--runs "0"/.test(err.message))
    assert.throws(() => parseScaleOptions(['--placement', 'docs']), (err) => err instanceof OptionError && /--placement "docs"/.test(err.message))
  })
})
