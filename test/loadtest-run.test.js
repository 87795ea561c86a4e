import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { TandemApi } from '../loadtest/api.js'
import { formatMs, formatPercent } from '../loadtest/report/format.js'
import { REST_ENDPOINTS, runRest } from '../loadtest/rest.js'
import { tableAfter } from './helpers/markdown.js'
import { freePort, missing } from './helpers/processes.js'
import { startServer, tempDataDir } from './helpers/server.js'

const CLI = new URL('../loadtest/cli.js', import.meta.url).pathname
const run = promisify(execFile)

describe('npm run loadtest, a small run against a server it spawns', () => {
  /** @type {any} */
  let report
  let markdown = ''
  /** @type {string[]} */
  let files = []
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let out

  before(async () => {
    out = await tempDataDir()
    const { stdout } = await run(process.execPath, [CLI, '--spawn', 'single', '--editors', '2,4', '--per-room', '2', '--apply', 'all', '--warmup', '1',
      '--duration', '2', '--rest-duration', '1', '--json', '--out', out.dir], { timeout: 120000 })
    report = JSON.parse(stdout)
    const [dir] = await readdir(out.dir)
    files = await readdir(join(out.dir, dir))
    markdown = await readFile(join(out.dir, dir, 'report.md'), 'utf8')
  })

  after(() => out.remove())

  it('writes report.md, report.json and chart.svg, and the JSON it prints is report.json', async () => {
    assert.deepEqual(files.sort(), ['chart.svg', 'report.json', 'report.md'])
    const [dir] = await readdir(out.dir)
    assert.deepEqual(JSON.parse(await readFile(join(out.dir, dir, 'report.json'), 'utf8')), report)
  })

  it('measures each level with real, consistent numbers', () => {
    assert.deepEqual(report.levels.map((/** @type {any} */ level) => level.editors), [2, 4])
    for (const level of report.levels) {
      const { updates, broadcast, connect } = level
      assert.equal(connect.joined, level.editors)
      assert.equal(level.rooms, level.editors / 2)
      assert.ok(updates.sent > 0, 'edits were sent')
      assert.equal(updates.acked + updates.refused + updates.timedOut, updates.sent)
      // Rooms of two: every edit is expected once, at the other editor of its room.
      assert.equal(broadcast.expected, updates.sent)
      assert.ok(broadcast.received <= broadcast.expected)
      assert.equal(broadcast.lost, 0, 'nothing lost on an idle loopback')
      assert.equal(updates.timedOut + updates.refused, 0)
      assert.equal(level.ackMs.count, updates.acked)
      assert.equal(level.broadcast.latencyMs.count, broadcast.received)
      assert.ok(level.ackMs.p50 > 0 && level.ackMs.p50 <= level.ackMs.p99 && level.ackMs.p99 <= level.ackMs.max)
      assert.ok(level.awareness.sent > 0 && level.awareness.received > 0, 'cursors moved')
      assert.equal(level.convergence.converged, true)
      assert.equal(level.convergence.editors, level.editors)
      assert.ok(level.server.updates > 0 && level.server.cpuPercent > 0 && level.server.rssMB > 0)
      assert.ok(level.generator.cpuPercent > 0)
      assert.equal(typeof level.slo.pass, 'boolean')
    }
    assert.deepEqual(report.rest.map((/** @type {any} */ r) => r.endpoint), ['POST /api/sessions', 'GET /api/sessions/:id', 'GET /api/sessions', 'GET /api/health', 'PUT /api/sessions/:id/content',
      'GET /api/sessions/:id/content?at='])
    // A spawned server keeps history, so reading a past time is measured like the rest.
    for (const rest of report.rest) assert.ok(rest.skipped === null && rest.requests > 0 && rest.non2xx === 0, rest.endpoint)
    assert.equal(typeof report.verdict.summary, 'string')
    assert.equal(report.target.mode, 'single')
  })

  it('says which server it measured: version, commit, storage, SYNC_WRITES and workers', async () => {
    const { version } = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'))
    assert.equal(report.server.version, version)
    assert.match(report.server.commit, /^[0-9a-f]{12}\b/)
    assert.equal(report.server.storage, 'leveldb')
    assert.equal(report.server.syncWrites, process.env.SYNC_WRITES === 'true')
    assert.equal(report.server.workers, 1)
    assert.deepEqual(tableAfter(markdown, '## Server under test').map(([name, value]) => [name, value]), [
      ['Version', version], ['Commit', report.server.commit], ['Storage', 'leveldb'], ['SYNC_WRITES', String(report.server.syncWrites)], ['Workers', '1']
    ])
  })

  it('shows in report.md exactly the figures of report.json', () => {
    const updates = tableAfter(markdown, '## Updates')
    const broadcasts = tableAfter(markdown, '## Broadcasts')
    assert.equal(updates.length, report.levels.length)
    report.levels.forEach((/** @type {any} */ level, /** @type {number} */ i) => {
      assert.deepEqual(updates[i], [String(level.editors), `${level.rooms} × ${level.perRoom}`, level.updates.achievedRate.toFixed(2),
        String(level.updates.sent), String(level.updates.acked), String(level.updates.timedOut), String(level.updates.refused),
        formatMs(level.ackMs.p50), formatMs(level.ackMs.p90), formatMs(level.ackMs.p99), formatMs(level.ackMs.max)])
      const latency = level.broadcast.latencyMs
      assert.deepEqual(broadcasts[i].slice(0, 8), [String(level.editors), String(level.broadcast.expected), String(level.broadcast.received),
        String(level.broadcast.lost), formatMs(latency.p50), formatMs(latency.p90), formatMs(latency.p99), formatMs(latency.max)])
      assert.equal(broadcasts[i][10], 'yes')
    })
    assert.ok(markdown.includes(report.verdict.summary))
    assert.deepEqual(tableAfter(markdown, '## REST').map(row => row[1]), report.rest.map((/** @type {any} */ r) => String(r.requests)))
  })
})

describe('npm run loadtest --spawn cluster --cluster-workers 2', { skip: missing('redis-server') }, () => {
  /** @type {any} */
  let report
  /** @type {any} */
  let level
  let markdown = ''

  before(async () => {
    const out = await tempDataDir()
    try {
      const { stdout } = await run(process.execPath, [CLI, '--spawn', 'cluster', '--cluster-workers', '2', '--editors', '10', '--per-room', '5', '--rate', '10',
        '--awareness-rate', '0', '--warmup', '1', '--duration', '6', '--rest-duration', '0', '--json', '--out', out.dir], { timeout: 120000 })
      report = JSON.parse(stdout)
      const [dir] = await readdir(out.dir)
      markdown = await readFile(join(out.dir, dir, 'report.md'), 'utf8')
    } finally {
      await out.remove()
    }
    level = report.levels[0]
  })

  it('starts one Redis and two server processes on ports of their own, and says how each room\'s editors were spread over them', () => {
    assert.equal(report.target.mode, 'cluster')
    assert.equal(new Set(report.target.urls).size, 2)
    assert.equal(report.server.workers, 2)
    assert.equal(report.server.storage, 'redis')
    assert.deepEqual(report.target.processes.map((/** @type {any} */ p) => p.name), ['server 0', 'server 1', 'redis-server'])
    const spread = 'rooms of 5: editors 0,2,4 on process 0; 1,3 on process 1'
    assert.deepEqual(report.target.spread, [{ roomSize: 5, byProcess: [[0, 2, 4], [1, 3]], text: spread }])
    assert.ok(markdown.includes(spread), 'report.md says it too')
    // Process 1 holds editors of every room only if the spread was applied: alone, it would idle.
    const [first, second] = level.serverProcess.processes
    assert.ok(second.cpuMs > 0.25 * first.cpuMs, `process 1 worked: ${second.cpuMs} ms of CPU against ${first.cpuMs} ms for process 0`)
  })

  it('reports as the server\'s CPU the sum over both processes and Redis, each listed', () => {
    const { processes, cpuMs, cpuPercent } = level.serverProcess
    assert.deepEqual(processes.map((/** @type {any} */ p) => p.pid), report.target.processes.map((/** @type {any} */ p) => p.pid))
    const redis = processes.find((/** @type {any} */ p) => p.name === 'redis-server')
    assert.ok(redis.cpuMs > 0, 'Redis stored the updates and carried the feed')
    assert.equal(cpuMs, processes.reduce((/** @type {number} */ total, /** @type {any} */ p) => total + p.cpuMs, 0))
    const [row] = tableAfter(markdown, '## Server processes')
    assert.equal(row[1], formatPercent(cpuPercent))
    assert.match(row[6], /^server 0 \d+% \(main thread \d+%\), server 1 \d+% \(main thread \d+%\), redis-server \d+% \(main thread \d+%\)$/)
    // A main thread is part of its process: never more than all of it (one clock tick of slack).
    for (const p of processes) assert.ok(p.mainThreadCpuPercent >= 0 && p.mainThreadCpuPercent <= p.cpuPercent + 1, `${p.name}: main thread ${p.mainThreadCpuPercent}% of ${p.cpuPercent}%`)
    assert.equal(tableAfter(markdown, '## Server and load generator')[0][5], formatPercent(cpuPercent))
  })

  // The two rates cover windows that differ by a /metrics round trip at each end, which a loaded
  // machine stretches: within 10%, while counting one process of two would be about 50% off.
  it('counts on the server side, summed over the processes, the deliveries the editors received (within 10%)', () => {
    assert.equal(level.updates.acked, level.updates.sent)
    assert.equal(level.broadcast.lost, 0)
    assert.equal(level.convergence.converged, true)
    const { perSecond, receivedPerSecond, cpuMsPer1000 } = level.deliveries
    assert.ok(Math.abs(perSecond / receivedPerSecond - 1) < 0.1, `server ${perSecond.toFixed(1)}/s, editors ${receivedPerSecond.toFixed(1)}/s`)
    assert.ok(Math.abs(cpuMsPer1000 - level.serverProcess.cpuPercent * 10 / (perSecond / 1000)) < 1e-9)
    assert.ok(level.server.updates > 0.9 * level.updates.acked, `${level.server.updates} of ${level.updates.acked} updates counted by the processes`)
  })
})

describe('the REST section against a server that keeps no history', () => {
  it('measures every endpoint but the read of a past time, which it skips after one 410 HISTORY_GONE, saying so', async () => {
    const tandem = await startServer({ restPerMinute: 0 })
    try {
      const results = await runRest(new TandemApi(tandem.url, null), { durationMs: 300 })
      assert.deepEqual(results.map(r => r.endpoint), REST_ENDPOINTS)
      const readAt = /** @type {import('../loadtest/rest.js').RestResult} */ (results.at(-1))
      assert.equal(readAt.endpoint, 'GET /api/sessions/:id/content?at=')
      assert.match(readAt.skipped ?? '', /^a first request answered 410 HISTORY_GONE: this server keeps no history/)
      assert.deepEqual([readAt.requests, readAt.requestsPerSecond, readAt.latencyMs, readAt.errors, readAt.non2xx], [null, null, null, null, null])
      for (const measured of results.slice(0, -1)) assert.ok(measured.skipped === null && /** @type {number} */ (measured.requests) > 0 && measured.non2xx === 0, measured.endpoint)
    } finally {
      await tandem.close()
    }
  })
})

describe('npm run loadtest against a server with auth on', () => {
  it('mints a token per room with --api-key and measures as usual', async () => {
    const apiKey = 'loadtest-api-key-0123'
    const tandem = await startServer({ authSecret: 'loadtest-secret-of-at-least-32-chars', apiKey, maxConnectionsPerIp: 0 })
    const out = await tempDataDir()
    const { stdout } = await run(process.execPath, [CLI, '--url', tandem.url, '--api-key', apiKey, '--editors', '4', '--per-room', '2',
      '--warmup', '0', '--duration', '1', '--rest-duration', '0', '--json', '--out', out.dir], { timeout: 60000 })
    await out.remove()
    await tandem.close()
    const [level] = JSON.parse(stdout).levels
    assert.ok(level.updates.acked > 0 && level.updates.acked === level.updates.sent)
    assert.equal(level.convergence.converged, true)
    assert.equal(level.convergence.editors, 2, 'by default one editor per room applies and is checked')
  })
})

describe('npm run loadtest --client wire', () => {
  it('drives the server over bare WebSockets: every edit acknowledged, cursors moved, every editor converged', async () => {
    const tandem = await startServer({ maxConnectionsPerIp: 0 })
    const out = await tempDataDir()
    try {
      const { stdout } = await run(process.execPath, [CLI, '--url', tandem.url, '--client', 'wire', '--editors', '4', '--per-room', '2', '--apply', 'all',
        '--warmup', '0', '--duration', '1', '--rest-duration', '0', '--json', '--out', out.dir], { timeout: 60000 })
      const report = JSON.parse(stdout)
      const [level] = report.levels
      assert.ok(level.updates.sent > 0 && level.updates.acked === level.updates.sent)
      assert.equal(level.broadcast.lost, 0)
      assert.ok(level.awareness.sent > 0 && level.awareness.received > 0, 'cursors moved')
      assert.equal(level.convergence.converged, true)
      assert.equal(level.convergence.editors, 4)
      assert.equal(report.settings.client, 'wire')
      assert.equal(report.server.workers, 1, 'from the one worker label of /metrics')
      const [dir] = await readdir(out.dir)
      assert.match(await readFile(join(out.dir, dir, 'report.md'), 'utf8'), /\| Editors' client \| wire: socket\.io-client's bytes over a bare WebSocket \|/)
    } finally {
      await out.remove()
      await tandem.close()
    }
  })
})

describe('npm run loadtest with no server at its URL', () => {
  it('says so in one line, with what to do, and exits 1', async () => {
    const url = `http://127.0.0.1:${await freePort()}`
    await assert.rejects(run(process.execPath, [CLI, '--url', url, '--rest-duration', '0'], { timeout: 60000 }), (/** @type {any} */ err) => {
      assert.equal(err.code, 1)
      assert.equal(err.stderr, `loadtest: no server answered at ${url} (ECONNREFUSED): start one there (npm start), point --url at one, ` +
        'or let the load test start its own (--spawn single)\n')
      return true
    })
  })
})

describe('npm run loadtest --runs 2', () => {
  it('keeps each run\'s report and shows each run\'s figures per level beside their medians', async () => {
    const tandem = await startServer({ maxConnectionsPerIp: 0 })
    const out = await tempDataDir()
    try {
      const { stdout } = await run(process.execPath, [CLI, '--url', tandem.url, '--editors', '2,4', '--per-room', '2', '--warmup', '0', '--duration', '1',
        '--rest-duration', '0', '--runs', '2', '--json', '--out', out.dir], { timeout: 60000 })
      const summary = JSON.parse(stdout)
      const dirs = (await readdir(out.dir)).sort()
      assert.equal(dirs.length, 3, 'two reports and the runs')
      const runsDir = join(out.dir, /** @type {string} */ (dirs.find(dir => dir.startsWith('runs-'))))
      assert.deepEqual(JSON.parse(await readFile(join(runsDir, 'runs.json'), 'utf8')), summary)
      assert.deepEqual(summary.runs.map((/** @type {any} */ r) => r.dir), dirs.filter(dir => !dir.startsWith('runs-')).map(dir => join(out.dir, dir)))
      for (const runOf of summary.runs) {
        const report = JSON.parse(await readFile(join(runOf.dir, 'report.json'), 'utf8'))
        assert.deepEqual(runOf.levels.map((/** @type {any} */ l) => [l.editors, l.ackP99Ms, l.lost]),
          report.levels.map((/** @type {any} */ l) => [l.editors, l.ackMs.p99, l.broadcast.lost]))
      }
      summary.medians.forEach((/** @type {any} */ median, /** @type {number} */ i) => {
        const [first, second] = summary.runs.map((/** @type {any} */ r) => r.levels[i])
        assert.equal(median.editors, first.editors)
        assert.equal(median.ackP99Ms, (first.ackP99Ms + second.ackP99Ms) / 2, 'the median of two is their mean')
        assert.equal(median.runsWithinSlos, [first, second].filter(level => level.withinSlos).length)
      })
      const markdown = await readFile(join(runsDir, 'runs.md'), 'utf8')
      const medians = tableAfter(markdown, '## Medians of 2 runs')
      assert.deepEqual(medians.map(row => [row[0], row[2], row.at(-1)]),
        summary.medians.map((/** @type {any} */ m) => [String(m.editors), formatMs(m.ackP99Ms), `${m.runsWithinSlos} of 2 runs`]))
      assert.equal(tableAfter(markdown, '## Each run').length, 4)
    } finally {
      await out.remove()
      await tandem.close()
    }
  })
})
