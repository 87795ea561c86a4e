import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { startServer, tempDataDir } from './helpers/server.js'

const CLI = new URL('../loadtest/cli.js', import.meta.url).pathname
const run = promisify(execFile)

/**
 * Runs `npm run loadtest -- --soak …` of 10 editors against a server of its own, whose documents
 * unload half a second after their last editor leaves, so the soak's end comes quickly.
 * @param {string[]} args the soak's own flags
 */
async function soakAgainstServer (args) {
  const out = await tempDataDir()
  const server = await startServer({ docIdleMs: 500, maxConnectionsPerIp: 0, connectionsPerMinute: 0, joinsPerMinute: 0 })
  const close = async () => {
    await server.close()
    await out.remove()
  }
  try {
    const { stdout } = await run(process.execPath, [CLI, '--url', server.url, ...args, '--soak-sample', '1s', '--editors', '10',
      '--warmup', '0', '--soak-unload-wait', '20s', '--json', '--out', out.dir], { timeout: 90000 })
    return { server, out, report: JSON.parse(stdout), close }
  } catch (err) {
    await close()
    throw err
  }
}

describe('npm run loadtest --soak', () => {
  /** @type {Awaited<ReturnType<typeof soakAgainstServer>>} */
  let soak
  /** @type {any} */
  let report
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let out

  before(async () => {
    soak = await soakAgainstServer(['--soak', '15s', '--soak-settle', '2s'])
    ;({ report, out } = soak)
  })

  after(() => soak.close())

  it('samples RSS, heap, documents and editors from before the editors join until their documents unloaded', () => {
    const { series } = report.soak
    assert.ok(series.length >= 12, `${series.length} samples over a 15 s soak sampled every second`)
    for (const sample of series) {
      for (const field of ['seconds', 'rssBytes', 'heapUsedBytes', 'documents', 'editors']) assert.equal(typeof sample[field], 'number', field)
      assert.ok(sample.rssBytes > 0 && sample.heapUsedBytes > 0)
    }
    assert.deepEqual(series.map((/** @type {any} */ s) => s.seconds), series.map((/** @type {any} */ s) => s.seconds).toSorted((/** @type {number} */ a, /** @type {number} */ b) => a - b))
    const phases = new Set(series.map((/** @type {any} */ s) => s.phase))
    for (const phase of ['idle', 'measuring', 'unloading', 'unloaded']) assert.ok(phases.has(phase), `phase ${phase}: ${[...phases]}`)
    assert.ok(series.some((/** @type {any} */ s) => s.phase === 'measuring' && s.documents === 2 && s.editors === 10), 'two rooms of five while editing')
    assert.equal(series.at(-1).documents, 0)
    assert.equal(report.soak.peak.documents, 2)
    assert.equal(report.levels.length, 1)
    assert.equal(report.levels[0].editors, 10)
    assert.equal(report.rest, null, 'no REST section in a soak')
  })

  it('computes the slope from minute 5, or halfway through a shorter soak, to the end of the editing', () => {
    const { series, slope } = report.soak
    const editing = series.filter((/** @type {any} */ s) => ['warm-up', 'measuring'].includes(s.phase))
    const from = editing.find((/** @type {any} */ s) => s.seconds - editing[0].seconds >= 15 / 2)
    const to = editing.at(-1)
    assert.equal(slope.fromSeconds, from.seconds)
    assert.equal(slope.toSeconds, to.seconds)
    assert.equal(slope.rssPercent, (to.rssBytes - from.rssBytes) / from.rssBytes * 100)
    assert.equal(slope.heapPercent, (to.heapUsedBytes - from.heapUsedBytes) / from.heapUsedBytes * 100)
  })

  it('compares memory after the unload with the idle baseline', () => {
    const { series, baseline, unload } = report.soak
    const idle = series.filter((/** @type {any} */ s) => s.phase === 'idle').at(-1)
    const last = series.filter((/** @type {any} */ s) => s.phase === 'unloaded').at(-1)
    assert.deepEqual(baseline, { rssBytes: idle.rssBytes, heapUsedBytes: idle.heapUsedBytes, documents: idle.documents })
    assert.equal(unload.unloaded, true)
    assert.equal(unload.rssPercentVsBaseline, (last.rssBytes - idle.rssBytes) / idle.rssBytes * 100)
    assert.equal(unload.heapPercentVsBaseline, (last.heapUsedBytes - idle.heapUsedBytes) / idle.heapUsedBytes * 100)
    assert.ok(report.soak.unloadWaitSeconds < 20)
  })

  it('writes the soak into report.md and charts it in soak.svg', async () => {
    const [dir] = await (await import('node:fs/promises')).readdir(out.dir)
    const markdown = await readFile(join(out.dir, dir, 'report.md'), 'utf8')
    assert.match(markdown, /^## Soak \(0\.3 min, a sample every 1 s\)$/m)
    assert.match(markdown, /RSS grew [+-]\d+\.\d%/)
    assert.match(markdown, /vs the idle \d+\.\d MB/)
    const svg = await readFile(join(out.dir, dir, 'soak.svg'), 'utf8')
    for (const series of ['RSS (MB)', 'heap used (MB)', 'documents (right)']) assert.match(svg, new RegExp(`<polyline data-series="${series.replace(/[()]/g, '\\$&')}"`))
  })
})

describe('npm run loadtest --soak with rooms that turn over (--soak-cycle)', () => {
  /** @type {Awaited<ReturnType<typeof soakAgainstServer>>} */
  let soak
  /** @type {any} */
  let report
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let server

  before(async () => {
    soak = await soakAgainstServer(['--soak', '16s', '--soak-cycle', '8s', '--soak-settle', '1s'])
    ;({ report, server } = soak)
  })

  after(() => soak.close())

  it('runs one level per cycle in new rooms, deleting the last cycle\'s before the next opens', async () => {
    assert.equal(report.soak.cycles, 2)
    assert.equal(report.levels.length, 2)
    for (const level of report.levels) {
      assert.equal(level.editors, 10)
      assert.equal(level.convergence.converged, true)
      assert.ok(level.updates.sent > 0)
      assert.equal(level.updates.acked, level.updates.sent)
    }
    const cycles = new Set(report.soak.series.filter((/** @type {any} */ s) => s.phase === 'measuring').map((/** @type {any} */ s) => s.cycle))
    assert.deepEqual([...cycles], [1, 2])
    // Two rooms at a time: the first cycle's documents went with their sessions.
    assert.equal(report.soak.peak.documents, 2)
    const sessions = await (await fetch(`${server.url}/api/sessions`)).json()
    assert.equal(sessions.sessions?.length ?? sessions.length, 0, 'every cycle\'s sessions deleted')
  })

  it('measures growth between the ends of two cycles, the same point of the rooms\' life', () => {
    const { series, slope } = report.soak
    const editing = series.filter((/** @type {any} */ s) => ['warm-up', 'measuring'].includes(s.phase))
    const endOf = (/** @type {number} */ cycle) => editing.filter((/** @type {any} */ s) => s.cycle === cycle).at(-1)
    assert.equal(slope.fromSeconds, endOf(1).seconds)
    assert.equal(slope.toSeconds, endOf(2).seconds)
    assert.equal(slope.rssPercent, (endOf(2).rssBytes - endOf(1).rssBytes) / endOf(1).rssBytes * 100)
  })
})
