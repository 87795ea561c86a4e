import assert from 'node:assert/strict'
import { execFile, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { readFile, readdir } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { SYSTEM_NAMES, parsePeerOptions } from '../bench/peers/options.js'
import { pinGenerator, pinServer } from '../bench/peers/pin.js'
import { renderPeerTables } from '../bench/peers/table.js'
import { OptionError } from '../loadtest/options.js'
import { OrderedAcks } from '../loadtest/protocols/websocket.js'
import { formatMs } from '../loadtest/report/format.js'
import { tableAfter } from './helpers/markdown.js'
import { tempDataDir } from './helpers/server.js'

const PEERS_CLI = new URL('../bench/peers/cli.js', import.meta.url).pathname
const run = promisify(execFile)

describe('npm run peers: a short run against every system, each started for it', () => {
  /** @type {any} */
  let bench
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let out

  before(async () => {
    out = await tempDataDir()
    const { stdout } = await run(process.execPath, [PEERS_CLI, '--one-doc', '5', '--rooms', '10', '--duration', '2s', '--warmup', '1s', '--apply', '--quiet-wait', '0', '--pin', '--json', '--out', out.dir], { timeout: 90000 })
    bench = JSON.parse(stdout)
  })

  after(() => out.remove())

  it('delivers every broadcast of every system, with no loss, and converges', () => {
    assert.deepEqual([...new Set(bench.results.map((/** @type {any} */ r) => r.system))], SYSTEM_NAMES)
    assert.deepEqual([...new Set(bench.results.map((/** @type {any} */ r) => r.load.label))], ['5 in 1 doc', '10 in rooms of 5'])
    for (const result of bench.results) {
      const where = `${result.system}, ${result.load.label}`
      assert.equal(result.error, null, where)
      assert.ok(result.sent > 0, `${where}: edits were sent`)
      // Every edit is expected at each of the 4 other editors of its room.
      assert.equal(result.expected, result.sent * 4, where)
      assert.equal(result.lost, 0, `${where}: nothing lost on an idle loopback`)
      assert.equal(result.received, result.expected, where)
      assert.equal(result.joinFailed + result.timedOut + result.disconnects, 0, where)
      assert.equal(result.converged, true, where)
      assert.ok(result.broadcastMs.p50 > 0 && result.broadcastMs.p50 <= result.broadcastMs.p99, where)
      assert.ok(result.deliveriesPerSecond > 0, where)
      assert.ok(result.server.cpuMs > 0 && result.server.peakRssMB > 10, `${where}: the server process was read from /proc`)
      assert.ok(result.server.cpuMsPer1000Deliveries > 0, where)
      // The main thread is part of the process: never more than all of it, give or take the
      // kernel's rounding of each clock (/proc scales a thread's ticks and the process's apart):
      // three ticks of 10 ms over the window.
      const slackPercent = 3 * 10 / (result.windowSeconds * 1000) * 100
      assert.ok(result.server.mainThreadCpuPercent >= 0 && result.server.mainThreadCpuPercent <= result.server.cpuPercent + slackPercent, `${where}: main thread ${result.server.mainThreadCpuPercent}% of ${result.server.cpuPercent}%`)
    }
  })

  it('measures an ACK where the protocol has one: Tandem\'s stored, Hocuspocus\'s applied', () => {
    for (const result of bench.results) {
      if (result.system === 'tandem' || result.system === 'hocuspocus') {
        assert.equal(result.acked, result.sent, result.system)
        assert.equal(result.ackMs.count, result.sent, result.system)
      } else {
        assert.equal(result.ackMeaning, null, result.system)
        assert.equal(result.ackMs, null, result.system)
      }
    }
  })

  it('prints one table of every system and load, and the ratios Tandem/peer per load, and keeps both', async () => {
    const markdown = renderPeerTables(bench)
    const [dir] = await readdir(out.dir)
    assert.deepEqual(JSON.parse(await readFile(join(out.dir, dir, 'peers.json'), 'utf8')), bench)
    assert.equal(await readFile(join(out.dir, dir, 'peers.md'), 'utf8'), markdown)
    const rows = tableAfter(markdown, '## Tandem and its peers')
    assert.equal(rows.length, bench.results.length)
    bench.results.forEach((/** @type {any} */ result, /** @type {number} */ i) => {
      assert.deepEqual(rows[i].slice(0, 2), [result.system, result.load.label])
      assert.equal(rows[i][7], '0', 'lost')
      assert.equal(rows[i][14], 'yes', 'converged')
    })
    assert.equal(rows.find(row => row[0] === 'ws-relay')?.[2], '–', 'no ACK')
    assert.equal(bench.settings.pinned, true)
    assert.match(markdown, /on CPU 0 alone, the load generator on the other CPUs/)
    const ratios = tableAfter(markdown, '### Ratios Tandem / peer')
    assert.equal(ratios.length, 2 * (SYSTEM_NAMES.length - 1))
    for (const row of ratios) assert.match(row[2], /^\d+(\.\d+)?$/)
  })
})

describe('npm run peers --runs: each load measured again, the systems in alternating order', () => {
  /** @type {any} */
  let bench
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let out

  before(async () => {
    out = await tempDataDir()
    const { stdout } = await run(process.execPath, [PEERS_CLI, '--systems', 'tandem,ws-relay', '--one-doc', 'none', '--rooms', '10', '--runs', '2', '--duration', '1s', '--warmup', '0s', '--quiet-wait', '0', '--json', '--out', out.dir], { timeout: 90000 })
    bench = JSON.parse(stdout)
  })

  after(() => out.remove())

  it('measures every system once per run, in the listed order in odd runs and the reverse in even ones', () => {
    assert.deepEqual(bench.results.map((/** @type {any} */ r) => `${r.system} ${r.run}`), ['tandem 1', 'ws-relay 1', 'ws-relay 2', 'tandem 2'])
    for (const result of bench.results) assert.equal(result.error, null, `${result.system}, run ${result.run}`)
    assert.equal(bench.settings.runs, 2)
  })

  it('adds each system\'s medians over the runs and, per peer, the median of the runs\' ratios with their range', () => {
    const markdown = renderPeerTables(bench)
    const rows = tableAfter(markdown, '## Tandem and its peers')
    assert.deepEqual(rows.map(row => `${row[0]} ${row.at(-1)}`), ['tandem 1', 'ws-relay 1', 'ws-relay 2', 'tandem 2'])

    const medians = tableAfter(markdown, '### Medians over 2 runs')
    assert.deepEqual(medians.map(row => [row[0], row[1], row[2]]), [['tandem', '10 in rooms of 5', '2'], ['ws-relay', '10 in rooms of 5', '2']])
    // Broadcast p99: every run has one (a 1 s window can read no CPU tick of a relay, but never no latency).
    const p99Of = (/** @type {string} */ system) => bench.results.filter((/** @type {any} */ r) => r.system === system).map((/** @type {any} */ r) => r.broadcastMs.p99)
    const mean = (/** @type {number[]} */ values) => (values[0] + values[1]) / 2
    assert.equal(medians[0][5], formatMs(mean(p99Of('tandem'))))

    const [ratioRow] = tableAfter(markdown, '### Ratios Tandem / peer')
    assert.deepEqual(ratioRow.slice(0, 2), ['10 in rooms of 5', 'ws-relay'])
    const perRun = [0, 1].map(i => p99Of('tandem')[i] / p99Of('ws-relay')[i])
    const format = (/** @type {number} */ r) => r >= 10 ? r.toFixed(0) : r.toFixed(2)
    assert.equal(ratioRow[3], `${format(mean(perRun))} (${format(Math.min(...perRun))}–${format(Math.max(...perRun))})`)
  })
})

describe('npm run peers: options', () => {
  it('defaults to every system, one document of 50 to 200 editors, rooms of 5 at 300 and 600, 20 s', () => {
    const options = parsePeerOptions([])
    assert.deepEqual(options.systems, SYSTEM_NAMES)
    assert.deepEqual(options.oneDoc, [50, 100, 150, 200])
    assert.deepEqual(options.rooms, [300, 600])
    assert.equal(options.perRoom, 5)
    assert.equal(options.rate, 5)
    assert.equal(options.payload, 8)
    assert.equal(options.durationMs, 20000)
    assert.equal(options.apply, false)
    assert.equal(options.tandemClient, 'wire', 'Tandem\'s editors speak over a bare WebSocket, as the peers\' do')
    assert.equal(options.runs, 1)
    assert.ok(Object.isFrozen(options))
  })

  it('puts Tandem first, skips a workload with `none`, and names the flag of a bad value', () => {
    const options = parsePeerOptions(['--systems', 'ws-relay,tandem', '--rooms', 'none', '--one-doc', '10'])
    assert.deepEqual(options.systems, ['tandem', 'ws-relay'])
    assert.deepEqual(options.rooms, [])
    assert.throws(() => parsePeerOptions(['--systems', 'tandem,etherpad']), (err) => err instanceof OptionError && /--systems "tandem,etherpad"/.test(err.message))
    assert.throws(() => parsePeerOptions(['--one-doc', 'none', '--rooms', 'none']), OptionError)
    assert.equal(parsePeerOptions(['--tandem-client', 'socket.io']).tandemClient, 'socket.io')
    assert.throws(() => parsePeerOptions(['--tandem-client', 'grpc']), (err) => err instanceof OptionError && /--tandem-client "grpc"/.test(err.message))
    assert.equal(parsePeerOptions(['--runs', '3']).runs, 3)
    assert.throws(() => parsePeerOptions(['--runs', '0']), (err) => err instanceof OptionError && /--runs "0"/.test(err.message))
  })
})

describe('npm run peers --pin', () => {
  it('moves every thread of a server to CPU 0, and the generator off it', async () => {
    const server = spawn('sleep', ['30'])
    try {
      pinServer(/** @type {number} */ (server.pid))
      assert.equal(allowedCpus(/** @type {number} */ (server.pid)), '0')
    } finally {
      server.kill()
    }
    // This test file runs in a process of its own: pinning it touches nothing else.
    const cpus = availableParallelism()
    pinGenerator()
    assert.equal(allowedCpus(process.pid), cpus === 2 ? '1' : `1-${cpus - 1}`)
  })
})

/** @param {number} pid */
const allowedCpus = pid => /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]

describe('ACKs answered in order', () => {
  it('gives each ACK to the oldest send, a timed-out send keeping its place', async () => {
    const acks = new OrderedAcks(50)
    const first = acks.expect()
    const late = acks.expect()
    acks.answer({ ok: true })
    assert.deepEqual(await first, { ok: true })
    await assert.rejects(late, /timed out/)
    const third = acks.expect()
    acks.answer({ ok: true }) // the late send's ACK, arriving after its timeout
    acks.answer({ ok: false, code: 'NOT_APPLIED' })
    assert.deepEqual(await third, { ok: false, code: 'NOT_APPLIED' })
  })
})
