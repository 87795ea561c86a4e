import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { formatMs } from '../loadtest/report/format.js'
import { tableAfter } from './helpers/markdown.js'
import { missing } from './helpers/processes.js'
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
    assert.deepEqual(report.rest.map((/** @type {any} */ r) => r.endpoint), ['POST /api/sessions', 'GET /api/sessions/:id', 'GET /api/sessions', 'GET /api/health'])
    for (const rest of report.rest) assert.ok(rest.requests > 0 && rest.non2xx === 0, rest.endpoint)
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

describe('npm run loadtest --spawn cluster', { skip: missing('redis-server') }, () => {
  it('starts redis-server and a 2-worker PM2 cluster itself, sums every worker\'s metrics, and stops them', async () => {
    const out = await tempDataDir()
    const { stdout } = await run(process.execPath, [CLI, '--spawn', 'cluster', '--editors', '4', '--per-room', '2', '--warmup', '1',
      '--duration', '2', '--rest-duration', '0', '--json', '--out', out.dir], { timeout: 120000 })
    const report = JSON.parse(stdout)
    await out.remove()
    assert.equal(report.target.mode, 'cluster')
    assert.equal(report.server.workers, 2)
    assert.equal(report.server.storage, 'redis')
    const [level] = report.levels
    assert.equal(level.updates.acked, level.updates.sent)
    assert.equal(level.broadcast.lost, 0)
    assert.equal(level.convergence.converged, true)
    // Counted by the workers themselves from one /metrics scrape: with editors spread over both
    // workers, one worker's count alone would be about half (window edges shift it a little).
    assert.ok(level.server.updates > 0.75 * level.updates.acked, `${level.server.updates} of ${level.updates.acked} updates counted by the workers`)
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
