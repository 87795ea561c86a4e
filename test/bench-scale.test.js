import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { before, describe, it } from 'node:test'
import { callsBetween, callsOf } from '../bench/redis-commands.js'
import { parseScaleOptions } from '../bench/scale-options.js'
import { COMPARED } from '../bench/scale-results.js'
import { renderScaleTable, topCommands } from '../bench/scale-table.js'
import { configurationsOf } from '../bench/scale.js'
import { OptionError } from '../loadtest/options.js'
import { formatMs, formatNumber, formatPercent } from '../loadtest/report/format.js'
import { tableAfter } from './helpers/markdown.js'
import { missing } from './helpers/processes.js'

const BENCH = new URL('../bench/index.js', import.meta.url).pathname
const run = promisify(execFile)
const HEADING = '## Scale-out'

/** @param {number} a @param {number} b @param {string} message */
const near = (a, b, message) => assert.ok(Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b)), `${message}: ${a} is not ${b}`)
/** @param {Record<string, number>} values */
const total = values => Object.values(values).reduce((sum, value) => sum + value, 0)
/** @param {number | null} r */
const ratioText = r => r === null ? '–' : `${r.toFixed(2)}×`

describe('npm run bench -- scale --workers 2: the embedded process, then two processes sharing nothing, on Redis each room on one, and on Redis spread', { skip: missing('redis-server') }, () => {
  /** @type {any} */
  let bench

  before(async () => {
    const { stdout } = await run(process.execPath, [BENCH, 'scale', '--workers', '2', '--editors', '20', '--rate', '10', '--duration', '1s', '--warmup', '1s',
      '--quiet-wait', '0', '--json'], { timeout: 120000 })
    bench = JSON.parse(stdout)
  })

  it('measures each configuration in turn, embedded first, with nothing lost', () => {
    assert.deepEqual(bench.results.map((/** @type {any} */ r) => r.label),
      ['embedded, 1 process', 'share-nothing, 2 processes', 'Redis, 2 processes, each room on one', 'Redis, 2 processes, spread'])
    for (const result of bench.results) {
      assert.equal(result.error, null, result.label)
      assert.ok(result.sent > 0 && result.deliveriesPerSecond > 0 && result.cpuMsPer1000Deliveries > 0, result.label)
      assert.equal(result.lost + result.timedOut, 0, result.label)
      assert.equal(result.converged, true, result.label)
    }
    const [embedded, shareNothing, rooms, spread] = bench.results
    assert.deepEqual(embedded.perProcess.map((/** @type {any} */ p) => p.name), ['server'])
    assert.deepEqual(rooms.perProcess.map((/** @type {any} */ p) => p.name), ['server 0', 'server 1', 'redis-server'])
    assert.deepEqual([rooms.placement, spread.placement], ['rooms', 'editors'])
    // A share-nothing process knows only the sessions created on it: an editor sent to the other could
    // not join, and the run would fail. Both processes carry load, and their deliveries add up.
    assert.deepEqual(shareNothing.perProcess.map((/** @type {any} */ p) => p.name), ['server 0', 'server 1'])
    for (const { cpuPercent } of shareNothing.perProcess) assert.ok(cpuPercent > 0)
    // One server's alone would be half; a busy machine moves a one-second run by a fifth or more.
    const off = Math.abs(shareNothing.deliveriesPerSecond - embedded.deliveriesPerSecond) / embedded.deliveriesPerSecond
    assert.ok(off < 0.35, `both servers' deliveries are counted (${Math.round(off * 100)} % off the single process's)`)
  })

  it('derives the CPU per delivery from the measured CPU and deliveries, and every × share-nothing from the share-nothing row of the same W', () => {
    const [embedded, shareNothing] = bench.results
    for (const result of bench.results) {
      const cpu = result.perProcess.reduce((/** @type {number} */ sum, /** @type {any} */ p) => sum + p.cpuPercent, 0)
      near(result.cpuPercent, cpu, `${result.label}: the CPU is the sum over its processes`)
      near(result.cpuMsPer1000Deliveries, result.cpuPercent * 10 / (result.deliveriesPerSecond / 1000), result.label)
      near(result.timesEmbedded, result.cpuMsPer1000Deliveries / embedded.cpuMsPer1000Deliveries, result.label)
    }
    assert.deepEqual(Object.values(embedded.timesShareNothing), [null, null, null, null], 'the embedded row is the reference of none')
    for (const result of bench.results.slice(1)) {
      assert.equal(result.shareNothing, 'share-nothing, 2 processes', result.label)
      for (const figure of COMPARED) {
        assert.ok(result[figure] > 0 && shareNothing[figure] > 0, `${result.label}: ${figure} measured`)
        near(result.timesShareNothing[figure], result[figure] / shareNothing[figure], `${result.label}: ${figure} × share-nothing`)
      }
    }
  })

  it('counts the commands Redis ran over the window per update acknowledged in it, for the Redis rows only', () => {
    for (const result of bench.results) {
      if (result.mode !== 'cluster') {
        assert.equal(result.redis, null, result.label)
        continue
      }
      const [counted] = result.redis.perRun
      assert.equal(result.redis.perRun.length, 1, result.label)
      assert.equal(counted.storedUpdates, result.sent, `${result.label}: every update sent in the window was acknowledged`)
      assert.equal(counted.commands, total(counted.calls), `${result.label}: the total is the sum over the commands`)
      assert.ok(counted.commandsPerUpdate > 0, result.label)
      near(counted.commandsPerUpdate, counted.commands / counted.storedUpdates, result.label)
      near(result.redis.commandsPerUpdate, counted.commandsPerUpdate, `${result.label}: one run is its own median`)
      assert.equal(counted.calls.info, undefined, `${result.label}: the bench's own INFO is not counted`)
      const byCommand = Object.entries(result.redis.byCommand)
      assert.deepEqual(byCommand.map(([name]) => name).sort(), Object.keys(counted.calls).sort(), result.label)
      for (const [name, perUpdate] of byCommand) near(perUpdate, counted.calls[name] / counted.storedUpdates, `${result.label}: ${name}`)
      assert.deepEqual(byCommand.map(([, perUpdate]) => perUpdate), byCommand.map(([, perUpdate]) => perUpdate).sort((a, b) => b - a), 'the most called first')
      near(total(result.redis.byCommand), result.redis.commandsPerUpdate, result.label)
    }
  })

  it('prints one table of the measured figures and their ratios, a line per Redis row, and the step of each kind', () => {
    const markdown = renderScaleTable(bench)
    const rows = tableAfter(markdown, HEADING)
    assert.deepEqual(rows, bench.results.map((/** @type {any} */ r) => [r.label, formatMs(r.ackP50Ms), formatMs(r.ackP99Ms), formatMs(r.broadcastP99Ms),
      formatNumber(r.deliveriesPerSecond), formatPercent(r.cpuPercent), formatNumber(r.cpuMsPer1000Deliveries, 1),
      ...COMPARED.map(figure => ratioText(r.timesShareNothing[figure])), formatNumber(r.redis?.commandsPerUpdate, 2)]))
    assert.deepEqual(rows[0].slice(7), ['–', '–', '–', '–', '–'])
    assert.deepEqual(rows[1].slice(7), ['1.00×', '1.00×', '1.00×', '1.00×', '–'])
    for (const r of bench.results.slice(2)) {
      assert.ok(markdown.includes(`${r.label}: ${r.redis.commandsPerUpdate.toFixed(2)} commands per stored update (${topCommands(r.redis.byCommand)})`), r.label)
    }
    assert.deepEqual(bench.steps, [{ series: 'share-nothing', from: 1, to: 2, cpuPerDelivery: bench.steps[0].cpuPerDelivery }])
    near(bench.steps[0].cpuPerDelivery, bench.results[1].cpuMsPer1000Deliveries / bench.results[0].cpuMsPer1000Deliveries, 'the step')
    assert.ok(markdown.includes(`share-nothing: 2 vs 1 processes, ${ratioText(bench.steps[0].cpuPerDelivery)} the CPU per delivery.`))
  })
})

describe('npm run bench -- scale --runs 2 --workers 1: every configuration measured twice, in turn, and given as medians', { skip: missing('redis-server') }, () => {
  /** @type {any} */
  let bench

  before(async () => {
    const { stdout } = await run(process.execPath, [BENCH, 'scale', '--runs', '2', '--workers', '1', '--editors', '10', '--rate', '10', '--duration', '1s', '--warmup', '1s',
      '--quiet-wait', '0', '--json'], { timeout: 120000 })
    bench = JSON.parse(stdout)
  })

  it('keeps each run\'s CPU per delivery and Redis counts and gives their medians, one Redis process compared with the embedded one', () => {
    assert.deepEqual(bench.results.map((/** @type {any} */ r) => r.label), ['embedded, 1 process', 'Redis, 1 process'])
    for (const result of bench.results) {
      const [first, second] = result.cpuMsPer1000DeliveriesPerRun
      assert.equal(result.cpuMsPer1000DeliveriesPerRun.length, 2, result.label)
      assert.ok(first > 0 && second > 0, result.label)
      near(result.cpuMsPer1000Deliveries, (first + second) / 2, `${result.label}: the median of two runs is their mean`)
      assert.equal(result.lost + result.timedOut, 0, result.label)
      assert.equal(result.converged, true, result.label)
    }
    const [embedded, one] = bench.results
    // One process sharing nothing is the embedded one.
    assert.equal(one.shareNothing, embedded.label)
    near(one.timesShareNothing.cpuMsPer1000Deliveries, one.cpuMsPer1000Deliveries / embedded.cpuMsPer1000Deliveries, 'CPU × share-nothing')
    const runs = one.redis.perRun
    assert.equal(runs.length, 2)
    for (const counted of runs) near(counted.commandsPerUpdate, counted.commands / counted.storedUpdates, 'each run')
    near(one.redis.commandsPerUpdate, (runs[0].commandsPerUpdate + runs[1].commandsPerUpdate) / 2, 'the median of two runs is their mean')
  })

  it('prints each run\'s figure beside the medians', () => {
    const markdown = renderScaleTable(bench)
    assert.ok(markdown.includes('Medians of 2 runs'))
    const rows = tableAfter(markdown, HEADING)
    assert.deepEqual(rows.map(row => row[12]), bench.results.map((/** @type {any} */ r) => r.cpuMsPer1000DeliveriesPerRun.map((/** @type {number} */ cpu) => formatNumber(cpu, 1)).join(', ')))
  })
})

describe('npm run bench -- scale: Redis command counts', () => {
  it('reads each command\'s calls from INFO commandstats and differences two reads, without the bench\'s own INFO', () => {
    const before = callsOf('# Commandstats\r\ncmdstat_info:calls=3,usec=90,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n' +
      'cmdstat_xadd:calls=10,usec=50,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\ncmdstat_client|setname:calls=2,usec=1,usec_per_call=0.50,rejected_calls=0,failed_calls=0\r\n')
    assert.deepEqual(before, { info: 3, xadd: 10, 'client|setname': 2 })
    const after = { info: 4, xadd: 25, 'client|setname': 2, evalsha: 7 }
    assert.deepEqual(callsBetween(before, after), { xadd: 15, evalsha: 7 })
  })

  it('names the five most called commands per stored update, and says when there are more', () => {
    assert.equal(topCommands({ xadd: 1, evalsha: 0.5 }), 'xadd 1.00, evalsha 0.50')
    assert.equal(topCommands({ a: 6, b: 5, c: 4, d: 3, e: 2, f: 1 }), 'a 6.00, b 5.00, c 4.00, d 3.00, e 2.00, …')
  })
})

describe('npm run bench -- scale: options', () => {
  it('defaults to 300 editors in rooms of 5 at 5 edits/s of 8 characters, 2 and 4 processes sharing nothing and Redis both ways, 15 s after 5 s, one run', () => {
    const options = parseScaleOptions([])
    assert.deepEqual(options.workers, [2, 4])
    assert.equal(options.editors, 300)
    assert.equal(options.perRoom, 5)
    assert.equal(options.rate, 5)
    assert.equal(options.payload, 8)
    assert.equal(options.durationMs, 15000)
    assert.equal(options.warmupMs, 5000)
    assert.equal(options.runs, 1)
    assert.deepEqual(options.placement, ['rooms', 'editors'])
    assert.equal(options.shareNothing, true)
    assert.ok(Object.isFrozen(options))
    assert.deepEqual(configurationsOf(options).map(c => c.label), ['embedded, 1 process',
      'share-nothing, 2 processes', 'Redis, 2 processes, each room on one', 'Redis, 2 processes, spread',
      'share-nothing, 4 processes', 'Redis, 4 processes, each room on one', 'Redis, 4 processes, spread'])
  })

  it('runs one Redis process for W = 1, and leaves out what --placement and --no-share-nothing leave out', () => {
    const options = parseScaleOptions(['--workers', '2,1', '--placement', 'editors', '--no-share-nothing'])
    assert.equal(options.shareNothing, false)
    assert.deepEqual(configurationsOf(options).map(c => c.label), ['embedded, 1 process', 'Redis, 1 process', 'Redis, 2 processes, spread'])
    assert.deepEqual(parseScaleOptions(['--placement', 'editors,rooms,editors']).placement, ['rooms', 'editors'])
  })

  it('runs each W\'s Redis configurations once per --spacing value, and the share-nothing processes once', () => {
    const options = parseScaleOptions(['--workers', '2', '--spacing', '20,0,20'])
    assert.deepEqual(options.spacing, [0, 20])
    const configurations = configurationsOf(options)
    assert.deepEqual(configurations.map(c => c.label), ['embedded, 1 process', 'share-nothing, 2 processes',
      'Redis, 2 processes, each room on one, spacing 0 ms', 'Redis, 2 processes, spread, spacing 0 ms',
      'Redis, 2 processes, each room on one, spacing 20 ms', 'Redis, 2 processes, spread, spacing 20 ms'])
    assert.deepEqual(configurations.map(c => c.spacingMs), [null, null, 0, 0, 20, 20])
    assert.deepEqual(parseScaleOptions([]).spacing, [])
    assert.throws(() => parseScaleOptions(['--spacing', '101']), (err) => err instanceof OptionError && /--spacing "101"/.test(err.message))
  })

  it('takes the process counts in ascending order, once each, and names the flag of a bad value or run count', () => {
    assert.deepEqual(parseScaleOptions(['--workers', '4,2,4']).workers, [2, 4])
    assert.throws(() => parseScaleOptions(['--workers', '0']), (err) => err instanceof OptionError && /--workers "0"/.test(err.message))
    assert.throws(() => parseScaleOptions(['--runs', '0']), (err) => err instanceof OptionError && /--runs "0"/.test(err.message))
    assert.throws(() => parseScaleOptions(['--placement', 'docs']), (err) => err instanceof OptionError && /--placement "docs"/.test(err.message))
    assert.throws(() => parseScaleOptions(['--separate']), OptionError)
  })
})
