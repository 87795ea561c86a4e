import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
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
    const { stdout } = await run(process.execPath, [CLI, '--url', server.url, '--editors', '1', '--trace', TRACE, '--rate', '5000',
      '--warmup', '0', '--duration', '120', '--ack-timeout', '60s', '--awareness-rate', '0', '--rest-duration', '0', '--keep-sessions', '--json', '--out', out.dir], { timeout: 150000 })
    const [level] = JSON.parse(stdout).levels
    assert.deepEqual(level.trace, { editorsFinished: 1, transactionsReplayed: trace.txns.length })
    assert.equal(level.updates.sent, trace.txns.length)
    assert.equal(level.updates.acked, trace.txns.length)
    assert.equal(level.convergence.converged, true)
    const { body } = await api(server.url, '/api/sessions?limit=1')
    assert.equal(await contentOf(server.url, body.sessions[0].id), trace.endContent)
  })
})
