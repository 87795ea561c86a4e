import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ClassicLevel } from 'classic-level'
import { startChildServer } from './helpers/child-server.js'
import { TestEditor } from './helpers/editor.js'
import { deferrals } from './helpers/processes.js'
import { rawWebSocket } from './helpers/raw-engine.js'
import { createSession, tempDataDir } from './helpers/server.js'

// A graceful stop must not wait on a client: PM2 kills a process that takes longer than its
// kill_timeout (15 s), and SHUTDOWN_TIMEOUT_MS (10 s) cuts the stop short before its final flush.

/** The keys a document has in the LevelDB store of `dataDir`, read after the server exited. @param {string} dataDir @param {string} docId */
async function storedKeysOf (dataDir, docId) {
  const db = new ClassicLevel(dataDir)
  try {
    return await db.keys({ gt: `!docs!${docId}!`, lt: `!docs!${docId}!~` }).all()
  } finally {
    await db.close()
  }
}

describe('shutdown', () => {
  it('exits 0 within a few seconds of SIGTERM, documents compacted, while one client has stopped reading', async (t) => {
    const defer = deferrals(t)
    const data = await tempDataDir()
    defer(() => data.remove())
    const server = await startChildServer({ DATA_DIR: data.dir })
    defer(() => server.stop('SIGKILL'))
    const session = await createSession(server.url)
    const alice = new TestEditor(server.url)
    defer(() => alice.close())
    await alice.join(session.id)
    for (let i = 0; i < 5; i++) assert.equal((await alice.insert(session.id, 0, `<${i}>`)).ok, true)

    // A client whose process stopped (SIGSTOP, a frozen tab): its socket is open, nothing read.
    const stuck = await rawWebSocket(server.url)
    defer(() => stuck.terminate())
    stuck.pause()

    const started = performance.now()
    const { code } = await server.stop('SIGTERM')
    const tookMs = performance.now() - started
    assert.equal(code, 0, JSON.stringify(server.logs.filter(entry => entry.level >= 40)))
    assert.ok(tookMs < 5000, `stopped in ${Math.round(tookMs)} ms`)
    assert.ok(server.logs.some(entry => entry.msg === 'stopped'))

    // The final flush compacted the document: one snapshot, no log entries left.
    const keys = await storedKeysOf(data.dir, session.id)
    assert.deepEqual(keys, [`!docs!${session.id}!s`])
  })
})
