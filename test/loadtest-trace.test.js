import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { loadTrace } from '../loadtest/edits/trace.js'
import { traceFixture } from './helpers/fixtures.js'
import { api, contentOf, startServer, tempDataDir } from './helpers/server.js'

const CLI = new URL('../loadtest/cli.js', import.meta.url).pathname
// A real code-editing trace (Joseph Gentle's editing-traces collection, CC BY 4.0), used in place.
const fixture = await traceFixture('sveltecomponent.json.gz')
const run = promisify(execFile)

describe('npm run loadtest --trace', { skip: fixture.skip }, () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let server
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let data
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let out

  before(async () => {
    data = await tempDataDir()
    out = await tempDataDir()
    // The trace is replayed at 5,000 edits/s, far past a person's typing and the per-connection rate
    // (and, on a loaded machine, past what the server acknowledges within the default 5 s: the ACK
    // timeout is raised, since every edit must be acknowledged, however late).
    server = await startServer({ dataDir: data.dir, updatesPerSecond: 0, bytesPerSecond: 0 })
  })

  after(async () => {
    await server.close()
    await data.remove()
    await out.remove()
  })

  it('replays a whole trace as one editor and leaves the trace\'s endContent on the server', async () => {
    const TRACE = fixture.path()
    const trace = await loadTrace(TRACE)
    const level = await replay(TRACE, 'sample')
    assert.deepEqual(level.trace, { editorsFinished: 1, transactionsReplayed: trace.txns.length })
    assert.equal(level.updates.sent, trace.txns.length)
    assert.equal(level.updates.acked, trace.txns.length)
    assert.equal(level.convergence.converged, true)
    assert.equal(await latestContent(), trace.endContent)
  })

  it('replays it whole with --apply none, where the editor makes its first 1,000 edits ahead and the rest when due', async () => {
    const TRACE = fixture.path()
    const trace = await loadTrace(TRACE)
    const level = await replay(TRACE, 'none')
    assert.deepEqual(level.trace, { editorsFinished: 1, transactionsReplayed: trace.txns.length })
    assert.equal(level.updates.acked, trace.txns.length)
    assert.equal(await latestContent(), trace.endContent)
  })

  it('replays with --apply none a trace shorter than the edits made ahead: every one sent, then the editor is done', async () => {
    const { startContent, txns } = await loadTrace(fixture.path())
    const short = txns.slice(0, 600)
    let endContent = startContent
    for (const { patches } of short) {
      for (const [pos, deleteCount, insert] of patches) endContent = endContent.slice(0, pos) + insert + endContent.slice(pos + deleteCount)
    }
    const file = join(out.dir, 'short-trace.json')
    await writeFile(file, JSON.stringify({ startContent, endContent, txns: short }))
    const level = await replay(file, 'none')
    assert.deepEqual(level.trace, { editorsFinished: 1, transactionsReplayed: short.length })
    assert.equal(level.updates.acked, short.length)
    assert.equal(await latestContent(), endContent)
  })

  /**
   * @param {string} trace
   * @param {'sample' | 'none'} apply
   */
  async function replay (trace, apply) {
    const { stdout } = await run(process.execPath, [CLI, '--url', server.url, '--editors', '1', '--trace', trace, '--rate', '5000', '--apply', apply,
      '--warmup', '0', '--duration', '120', '--ack-timeout', '60s', '--awareness-rate', '0', '--rest-duration', '0', '--keep-sessions', '--json', '--out', out.dir], { timeout: 150000 })
    return JSON.parse(stdout).levels[0]
  }

  /** The content of the session created last. */
  async function latestContent () {
    const { body } = await api(server.url, '/api/sessions?limit=1')
    return contentOf(server.url, body.sessions[0].id)
  }
})
