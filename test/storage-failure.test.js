import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { CLOSE_REASONS, EVENTS } from '../isomorphic/events.js'
import { startChildServer } from './helpers/child-server.js'
import { TestEditor } from './helpers/editor.js'
import { openDoc } from './helpers/provider.js'
import { eventually } from './helpers/eventually.js'
import { deferrals } from './helpers/processes.js'
import { api, contentOf, createSession, startServer, tempDataDir } from './helpers/server.js'
import { mountSmallDisk, smallDiskUnavailable } from './helpers/small-disk.js'

// Storage that fails for a moment must never cost an acknowledged edit. These tests count losses in
// what a fresh process reads from storage, never through a client, which would resync what the
// server lost and hide it.

/**
 * Types `count` edits one after the other, each a unique token; returns the tokens acknowledged and
 * the codes of the refusals. A refused edit is not sent again, as when a browser tab closes.
 * @param {TestEditor} editor @param {string} doc @param {string} tag @param {number} count @param {number} [padding]
 */
async function type (editor, doc, tag, count, padding = 0) {
  /** @type {string[]} */
  const acked = []
  /** @type {string[]} */
  const refused = []
  for (let i = 0; i < count; i++) {
    const token = `<${tag}${i}>`
    const reply = await editor.insert(doc, editor.text(doc).length, token + '.'.repeat(padding))
    if (reply.ok) acked.push(token)
    else refused.push(reply.error.code)
  }
  return { acked, refused }
}

describe('storage failure: an acknowledged edit survives a full disk', { skip: await smallDiskUnavailable() }, () => {
  it('keeps every acknowledged edit readable after the disk fills, frees, and the process is killed', async (t) => {
    const defer = deferrals(t)
    const disk = await mountSmallDisk(8)
    defer(() => disk.remove())
    const env = { DATA_DIR: join(disk.dir, 'data'), UPDATES_PER_SECOND: '0' }
    let server = await startChildServer(env)
    defer(() => server.stop('SIGKILL'))
    const session = await createSession(server.url)
    const alice = new TestEditor(server.url)
    defer(() => alice.close())
    await alice.join(session.id)

    const before = await type(alice, session.id, 'a', 20)
    assert.equal(before.acked.length, 20)

    await disk.fill()

    const full = await type(alice, session.id, 'b', 30, 3000)
    assert.ok(full.refused.length > 0, 'a full disk refuses edits')
    // The first refusal drops the document's copy (it holds the refused edit) and its editors: the
    // later ones are refused as not joined.
    assert.equal(full.refused[0], 'UNAVAILABLE')
    assert.ok(full.refused.every(code => code === 'UNAVAILABLE' || code === 'NOT_JOINED'), `refused with ${full.refused}`)

    const unhealthy = await api(server.url, '/api/health')
    assert.equal(unhealthy.status, 503, 'a process that cannot store reports itself not ready')

    await disk.free()
    await eventually(async () => (await api(server.url, '/api/health')).status === 200, { what: 'healthy once space is back' })
    // The document was reloaded from storage: its editors are told to rejoin. The same editor then
    // goes on typing on a copy that holds the edits it was refused without sending them again: each
    // later edit is refused OUT_OF_SYNC (it builds on them), or acknowledged and then readable.
    assert.ok(alice.received.some(({ event, payload }) => event === EVENTS.CLOSED && payload.reason === CLOSE_REASONS.RELOAD))
    await eventually(async () => (await alice.join(session.id)).ok, { intervalMs: 50, what: 'rejoined' })
    const after = await type(alice, session.id, 'c', 30)
    assert.deepEqual(new Set(after.refused), new Set(['OUT_OF_SYNC']), 'later edits build on the refused ones')

    // A new editor is served as before, with no restart.
    const bob = new TestEditor(server.url)
    defer(() => bob.close())
    await bob.join(session.id)
    const fresh = await type(bob, session.id, 'd', 10)
    assert.equal(fresh.acked.length, 10)

    await server.stop('SIGKILL')
    server = await startChildServer(env)
    const text = await contentOf(server.url, session.id)
    const acked = [...before.acked, ...full.acked, ...after.acked, ...fresh.acked]
    const lost = acked.filter(token => !text.includes(token))
    assert.deepEqual(lost, [], `${lost.length} of ${acked.length} acknowledged edits are not in storage`)
  })

  it('heals every provider by itself after the disk fills while they type', async (t) => {
    const defer = deferrals(t)
    const disk = await mountSmallDisk(8)
    defer(() => disk.remove())
    const env = { DATA_DIR: join(disk.dir, 'data'), UPDATES_PER_SECOND: '0', REST_PER_MINUTE: '0' }
    let server = await startChildServer(env)
    defer(() => server.stop('SIGKILL'))
    const session = await createSession(server.url)
    const docs = Array.from({ length: 4 }, () => openDoc(server.url, session.id, { retryDelayMs: 100, maxRetryDelayMs: 1000 }))
    defer(() => docs.forEach(doc => doc.destroy()))
    await eventually(() => docs.every(doc => doc.settled()), { what: 'providers joined' })

    const typing = new AbortController()
    const typed = (async () => {
      // Bounded: stops when `typing` is aborted below, after a fixed time.
      for (let i = 0; !typing.signal.aborted; i++) {
        docs[i % docs.length].append(`<p${i % docs.length}.${i}>` + '.'.repeat(i % 7 === 0 ? 2000 : 0))
        await new Promise(resolve => setTimeout(resolve, 20))
      }
    })()
    await new Promise(resolve => setTimeout(resolve, 500))
    await disk.fill()
    await new Promise(resolve => setTimeout(resolve, 1500))
    await disk.free()
    await new Promise(resolve => setTimeout(resolve, 500))
    typing.abort()
    await typed

    await eventually(async () => {
      const text = await contentOf(server.url, session.id)
      return docs.every(doc => doc.settled() && doc.provider.synced && doc.text() === text)
    }, { timeoutMs: 30000, intervalMs: 100, what: 'every provider holding the server\'s exact text' })
    assert.ok(docs.some(doc => doc.events.closed.includes(CLOSE_REASONS.RELOAD)), 'the full disk refused writes')
    const expected = docs[0].text()
    for (const doc of docs) assert.equal(doc.ydoc.store.pendingStructs, null)
    // And it is all in storage: a restart serves the same text.
    await server.stop('SIGKILL')
    server = await startChildServer(env)
    assert.equal(await contentOf(server.url, session.id), expected)
  })
})

describe('storage failure: LevelDB refusing the move of the update log', () => {
  it('acknowledges every edit while moves to LevelDB fail, reloads no document, and serves them all after a restart', async (t) => {
    const defer = deferrals(t)
    const data = await tempDataDir()
    defer(() => data.remove())
    let tandem = await startServer({ dataDir: data.dir })
    defer(() => tandem.close())
    const store = /** @type {import('../server/storage/level-doc-store.js').LevelDocStore} */ (tandem.server.registry.store)
    // LevelDB's batch fails as on an I/O error, and the database's reopen waits until the test lets
    // it go on: the updates moved in that window sit only in the update log.
    const docs = /** @type {any} */ (store.docs)
    const batch = docs.batch.bind(docs)
    let failing = false
    docs.batch = (/** @type {any[]} */ ...args) => failing
      ? Promise.reject(Object.assign(new Error('IO error: 000005.log: Input/output error'), { code: 'LEVEL_IO_ERROR' }))
      : batch(...args)
    const db = /** @type {any} */ (store.guard.db)
    const open = db.open.bind(db)
    /** @type {() => void} */
    let reopen = () => {}
    const reopened = new Promise(resolve => { reopen = () => resolve(undefined) })
    db.open = async () => { await reopened; return open() }

    const session = await createSession(tandem.url)
    const alice = new TestEditor(tandem.url)
    defer(() => alice.close())
    await alice.join(session.id)
    const before = await type(alice, session.id, 'a', 5)
    failing = true
    const failed = await type(alice, session.id, 'b', 1)
    await eventually(() => !store.guard.ready, { what: 'a move failed' })
    const during = await type(alice, session.id, 'c', 20)
    assert.equal(store.guard.ready, false, 'LevelDB was failed throughout')
    reopen()
    failing = false
    await eventually(() => store.guard.ready, { what: 'LevelDB reopened' })
    const after = await type(alice, session.id, 'd', 5)

    const acked = [...before.acked, ...failed.acked, ...during.acked, ...after.acked]
    assert.equal(acked.length, 31, `refused: ${[...failed.refused, ...during.refused, ...after.refused]}`)
    // The last ACK came after any reload the failure could have caused.
    assert.deepEqual(alice.received.filter(({ event }) => event === EVENTS.CLOSED), [], 'no document was reloaded')

    await tandem.close()
    tandem = await startServer({ dataDir: data.dir })
    const text = await contentOf(tandem.url, session.id)
    assert.deepEqual(acked.filter(token => !text.includes(token)), [])
  })
})
