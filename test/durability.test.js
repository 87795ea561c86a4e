import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import * as Y from 'yjs'
import { EVENTS } from '../isomorphic/events.js'
import { startChildServer } from './helpers/child-server.js'
import { TestEditor, typeUntilKilled } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { api, contentOf, createSession, startServer, tempDataDir } from './helpers/server.js'

describe('durability: nothing acknowledged is lost', () => {
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let data
  before(async () => { data = await tempDataDir() })
  after(async () => { await data.remove() })

  it('keeps sessions and every edit across a restart on the same data dir', async () => {
    const dir = `${data.dir}/restart`
    let tandem = await startServer({ dataDir: dir })
    const session = await createSession(tandem.url, { name: 'kept', language: 'go', content: 'package main\n' })
    const alice = new TestEditor(tandem.url)
    await alice.join(session.id)
    for (const line of ['import "fmt"\n', 'func main() {}\n']) {
      assert.deepEqual(await alice.insert(session.id, alice.text(session.id).length, line), { ok: true })
    }
    const expected = alice.text(session.id)
    alice.close()
    await tandem.close()

    tandem = await startServer({ dataDir: dir })
    const { body } = await api(tandem.url, `/api/sessions/${session.id}`)
    assert.equal(body.name, 'kept')
    assert.equal(body.language, 'go')
    assert.equal(await contentOf(tandem.url, session.id), expected)
    const bob = new TestEditor(tandem.url)
    await bob.join(session.id)
    assert.equal(bob.text(session.id), expected)
    bob.close()
    await tandem.close()
  })

  it('loses no acknowledged update when the server is killed with SIGKILL mid-typing', async () => {
    const dir = `${data.dir}/kill9`
    // Updates go out as fast as ACKs return, past the default per-connection rate.
    let server = await startChildServer({ DATA_DIR: dir, UPDATES_PER_SECOND: '0' })
    const session = await createSession(server.url)
    const alice = new TestEditor(server.url)
    await alice.join(session.id)
    // Ten updates in flight, and kill -9 the moment the 150th ACK arrives.
    const { acked, exit } = await typeUntilKilled(alice, session.id, server, 150)
    assert.equal(exit.signal, 'SIGKILL')
    alice.close()

    server = await startChildServer({ DATA_DIR: dir })
    const text = await contentOf(server.url, session.id)
    const missing = acked.filter(token => !text.includes(token))
    assert.deepEqual(missing, [], `${missing.length} of ${acked.length} acknowledged updates lost`)
    assert.equal((await server.stop('SIGTERM')).code, 0)
  })

  it('shuts down on SIGTERM within the bound, exits 0 and flushes documents', async () => {
    const dir = `${data.dir}/sigterm`
    const server = await startChildServer({ DATA_DIR: dir, SHUTDOWN_TIMEOUT_MS: '5000' })
    const session = await createSession(server.url)
    const alice = new TestEditor(server.url)
    await alice.join(session.id)
    for (let i = 0; i < 20; i++) await alice.insert(session.id, 0, `${i};`)
    const disconnected = new Promise(resolve => alice.socket.once('disconnect', resolve))
    const started = Date.now()
    const { code } = await server.stop('SIGTERM')
    assert.equal(code, 0)
    assert.ok(Date.now() - started < 5000)
    await disconnected
    assert.ok(server.logs.some(entry => entry.msg === 'stopped'))
    alice.close()

    const tandem = await startServer({ dataDir: dir })
    const stored = await tandem.server.registry.store.load(session.id)
    assert.equal(stored.updates.length, 1, 'the log was compacted into one snapshot on shutdown')
    assert.equal((await contentOf(tandem.url, session.id)).length, 20 * 2 + 10)
    await tandem.close()
  })

  it('compacts the update log into a snapshot as it grows, keeping the text', async () => {
    const tandem = await startServer({ dataDir: `${data.dir}/compact`, compactAfterUpdates: 20 })
    const session = await createSession(tandem.url)
    const alice = new TestEditor(tandem.url)
    await alice.join(session.id)
    for (let i = 0; i < 65; i++) await alice.insert(session.id, alice.text(session.id).length, 'ab')
    // A compaction runs beside the writes: the last one may still be under way after the last ACK.
    await tandem.server.registry.get(session.id)?.settled()
    const { updates } = await tandem.server.registry.store.load(session.id)
    assert.ok(updates.length < 20, `log holds ${updates.length} entries`)
    assert.equal(await contentOf(tandem.url, session.id), 'ab'.repeat(65))
    alice.close()
    await tandem.close()
  })

  /**
   * A server with these settings, a session and an editor joined to it; `settled` waits for its
   * document's writes and compaction.
   * @param {import('node:test').TestContext} t
   * @param {string} name
   * @param {object} settings
   */
  async function joinedEditor (t, name, settings) {
    const tandem = await startServer({ dataDir: `${data.dir}/${name}`, updatesPerSecond: 0, ...settings })
    t.after(() => tandem.close())
    const session = await createSession(tandem.url)
    const alice = new TestEditor(tandem.url)
    t.after(() => alice.close())
    await alice.join(session.id)
    const settled = async () => { await tandem.server.registry.get(session.id)?.settled() }
    return { tandem, session, alice, settled }
  }

  it('compacts a large document once its log holds as many bytes as its snapshot, not every few updates', async (t) => {
    const { tandem, session, alice, settled } = await joinedEditor(t, 'compact-large', { compactAfterUpdates: 5 })
    const store = tandem.server.registry.store
    const compact = store.compact.bind(store)
    let compactions = 0
    store.compact = (docId, makeSnapshot) => {
      compactions++
      return compact(docId, makeSnapshot)
    }
    // The first compaction comes after 5 updates and leaves a snapshot of about 20 KB.
    assert.deepEqual(await alice.insert(session.id, 0, 'x'.repeat(20000)), { ok: true })
    for (let i = 0; i < 4; i++) await alice.insert(session.id, 0, 'a')
    await settled()
    assert.equal(compactions, 1)
    // Forty one-character updates hold far fewer bytes than that snapshot.
    for (let i = 0; i < 40; i++) await alice.insert(session.id, 0, 'b')
    await settled()
    assert.equal(compactions, 1, 'small updates compacted a large document')
    // With as many bytes in the log as in the snapshot, the write compacts.
    await alice.insert(session.id, 0, 'y'.repeat(20000))
    await settled()
    assert.equal(compactions, 2)
    assert.equal(await contentOf(tandem.url, session.id), alice.text(session.id))
  })

  it('compacts by the count of updates again once a document passes half its size limit, so it is not refused for its log', async (t) => {
    const { tandem, session, alice, settled } = await joinedEditor(t, 'compact-near-limit', { compactAfterUpdates: 2, maxDocBytes: 60000 })
    assert.deepEqual(await alice.insert(session.id, 0, 'x'.repeat(35000)), { ok: true })
    // Each round replaces 10 KB: the text stays 35 KB, the log grows by 10 KB. Compacted by the
    // bytes alone (10 KB of log against a 35 KB snapshot), the fourth round would pass 60 KB.
    for (let round = 0; round < 6; round++) {
      const reply = await alice.edit(session.id, text => {
        text.delete(0, 10000)
        text.insert(0, String(round).repeat(10000))
      })
      assert.deepEqual(reply, { ok: true }, `round ${round}`)
      await settled()
    }
    assert.equal(await contentOf(tandem.url, session.id), alice.text(session.id))
  })

  it('keeps every acknowledged update when updates keep landing while the log is compacted', async () => {
    const dir = `${data.dir}/compact-busy`
    let tandem = await startServer({ dataDir: dir, compactAfterUpdates: 7, updatesPerSecond: 0 })
    const session = await createSession(tandem.url)
    const alice = new TestEditor(tandem.url)
    await alice.join(session.id)
    // 300 keystrokes in flight at once: compactions start while later appends are being written.
    const ydoc = alice.ydoc(session.id)
    /** @type {Uint8Array[]} */
    const updates = []
    ydoc.on('update', (/** @type {Uint8Array} */ update) => updates.push(update))
    for (let i = 0; i < 300; i++) ydoc.getText('content').insert(i, String(i % 10))
    const acks = await Promise.all(updates.map(update => alice.request(EVENTS.UPDATE, { doc: session.id, update })))
    assert.ok(acks.every(ack => ack.ok))
    const text = ydoc.getText('content').toString()
    alice.close()
    await tandem.close()
    tandem = await startServer({ dataDir: dir })
    assert.equal(await contentOf(tandem.url, session.id), text)
    await tandem.close()
  })

  /**
   * A server that compacts after `compactAfterUpdates`, its store, and the store's own `compact`, for
   * a test to wrap.
   * @param {import('node:test').TestContext} t
   * @param {string} name
   * @param {number} compactAfterUpdates
   */
  async function compactingServer (t, name, compactAfterUpdates) {
    const tandem = await startServer({ dataDir: `${data.dir}/${name}`, compactAfterUpdates, updatesPerSecond: 0 })
    t.after(() => tandem.close())
    const store = tandem.server.registry.store
    return { tandem, store, compact: store.compact.bind(store) }
  }

  it('acknowledges updates while a compaction is still under way, and the compaction keeps them', async (t) => {
    const { tandem, store, compact } = await compactingServer(t, 'compact-beside', 5)
    const { held, release } = gate()
    let compactions = 0
    // The first compaction waits before it takes its snapshot until the test lets it go on.
    store.compact = async (docId, makeSnapshot) => {
      if (compactions++ === 0) await held
      return compact(docId, makeSnapshot)
    }
    const session = await createSession(tandem.url)
    const alice = new TestEditor(tandem.url)
    t.after(() => alice.close())
    await alice.join(session.id)
    for (let i = 0; i < 5; i++) assert.deepEqual(await alice.insert(session.id, alice.text(session.id).length, 'a'), { ok: true })
    assert.equal(compactions, 1, 'the fifth stored update began a compaction')
    const ack = alice.insert(session.id, 0, 'while compacting;')
    const first = await Promise.race([ack, new Promise(resolve => setTimeout(() => resolve('still waiting'), 2000))])
    assert.deepEqual(first, { ok: true }, 'the ACK did not wait for the compaction')
    release()
    await tandem.server.registry.get(session.id)?.settled()
    assert.equal(await contentOf(tandem.url, session.id), alice.text(session.id))
  })

  it('compacts documents that fall due together one at a time, and every one of them', async (t) => {
    const { tandem, store, compact } = await compactingServer(t, 'compact-queue', 3)
    const { held, release } = gate()
    /** @type {string[]} */
    const started = []
    let running = 0
    let mostAtOnce = 0
    // The first compaction waits until the test lets it go on.
    store.compact = async (docId, makeSnapshot) => {
      started.push(docId)
      mostAtOnce = Math.max(mostAtOnce, ++running)
      try {
        if (started.length === 1) await held
        return await compact(docId, makeSnapshot)
      } finally {
        running--
      }
    }
    const alice = new TestEditor(tandem.url)
    t.after(() => alice.close())
    const sessions = []
    for (let i = 0; i < 3; i++) {
      const session = await createSession(tandem.url)
      await alice.join(session.id)
      sessions.push(session)
    }
    for (const session of sessions) {
      for (let i = 0; i < 3; i++) assert.deepEqual(await alice.insert(session.id, 0, 'ab'), { ok: true })
    }
    assert.deepEqual(started, [sessions[0].id], 'the other documents\' compactions waited for the first')
    release()
    await eventually(() => started.length === 3)
    for (const session of sessions) await tandem.server.registry.get(session.id)?.settled()
    assert.deepEqual([...started].sort(), sessions.map(session => session.id).sort())
    assert.equal(mostAtOnce, 1)
    for (const session of sessions) {
      assert.equal((await store.load(session.id)).updates.length, 1, 'the log was compacted into one snapshot')
      assert.equal(await contentOf(tandem.url, session.id), 'ababab')
    }
  })

  it('compacts nothing from a copy whose write failed while its compaction waited its turn', async (t) => {
    const { tandem, store, compact } = await compactingServer(t, 'compact-after-failure', 3)
    const { held, release } = gate()
    /** @type {string[]} */
    const started = []
    store.compact = async (docId, makeSnapshot) => {
      started.push(docId)
      if (started.length === 1) await held
      return compact(docId, makeSnapshot)
    }
    const alice = new TestEditor(tandem.url)
    t.after(() => alice.close())
    const first = await createSession(tandem.url)
    const second = await createSession(tandem.url)
    for (const session of [first, second]) {
      await alice.join(session.id)
      for (let i = 0; i < 3; i++) assert.deepEqual(await alice.insert(session.id, 0, 'ab'), { ok: true })
    }
    assert.deepEqual(started, [first.id], 'the second document\'s compaction waits its turn')
    // The second document's next write fails: its copy holds an update storage does not.
    const copy = tandem.server.registry.get(second.id)
    const append = store.append.bind(store)
    store.append = (docId, updates) => docId === second.id ? Promise.reject(new Error('write refused')) : append(docId, updates)
    const refused = await alice.insert(second.id, 0, 'lost;')
    assert.equal(refused.ok, false)
    store.append = append
    release()
    // Its turn in the queue has come once the copy has settled.
    await copy?.settled()
    assert.deepEqual(started, [first.id], 'the untrusted copy was not compacted')
    assert.equal(await contentOf(tandem.url, second.id), 'ababab')
  })

  it('keeps the entries a compaction does not cover: those moved to LevelDB after it began', async (t) => {
    const tandem = await startServer({ dataDir: `${data.dir}/compact-covers` })
    t.after(() => tandem.close())
    const store = /** @type {import('../server/storage/level-doc-store.js').LevelDocStore} */ (tandem.server.registry.store)
    const ydoc = new Y.Doc()
    /** @type {Uint8Array[]} */
    const updates = []
    ydoc.on('update', (/** @type {Uint8Array} */ update) => updates.push(update))
    const text = ydoc.getText('content')
    text.insert(0, 'before;')
    await store.append('doc', updates.splice(0))
    await eventually(async () => (await store.docs.keys({ gt: 'doc!b!', lt: 'doc!b!~' }).all()).length === 1)
    const snapshot = Y.encodeStateAsUpdate(ydoc)
    assert.equal(await store.compact('doc', async () => {
      // An update appended and moved to LevelDB after the compaction began, before its snapshot.
      text.insert(text.length, 'after;')
      await store.append('doc', updates.splice(0))
      await eventually(async () => (await store.docs.keys({ gt: 'doc!b!', lt: 'doc!b!~' }).all()).length === 2)
      return { snapshot, position: null }
    }), true)
    const loaded = new Y.Doc()
    for (const update of (await store.load('doc')).updates) Y.applyUpdate(loaded, update)
    assert.equal(loaded.getText('content').toString(), 'before;after;')
  })

  it('moves updates to LevelDB one batch at a time: an update whose move is slow is still read meanwhile', async (t) => {
    const tandem = await startServer({ dataDir: `${data.dir}/one-move` })
    t.after(() => tandem.close())
    const store = /** @type {import('../server/storage/level-doc-store.js').LevelDocStore} */ (tandem.server.registry.store)
    const docs = /** @type {any} */ (store.docs)
    const batch = docs.batch.bind(docs)
    const { held, release } = gate()
    let calls = 0
    let inFlight = 0
    let most = 0
    // The first move's LevelDB write waits until the test lets it go on, as a busy disk would.
    docs.batch = async (/** @type {any[]} */ ...args) => {
      inFlight++
      most = Math.max(most, inFlight)
      try {
        if (calls++ === 0) await held
        return await batch(...args)
      } finally {
        inFlight--
      }
    }
    await store.append('slow', [updateOf('moved slowly;')])
    await eventually(() => calls === 1)
    await store.append('next', [updateOf('moved next;')])
    // Three move intervals pass while the first write is held.
    await new Promise(resolve => setTimeout(resolve, 300))
    assert.equal(await textOf(store, 'slow'), 'moved slowly;', 'read while its move is held')
    release()
    await eventually(() => calls === 2)
    assert.equal(most, 1, 'one LevelDB write of the moves at a time')
    assert.equal(await textOf(store, 'next'), 'moved next;')
    assert.equal((await store.docs.keys({ gt: 'slow!b!', lt: 'slow!b!~' }).all()).length, 1, 'in LevelDB')
  })

  it('unloads idle documents and loads them back intact', async () => {
    const tandem = await startServer({ dataDir: `${data.dir}/idle`, docIdleMs: 50 })
    const session = await createSession(tandem.url)
    const alice = new TestEditor(tandem.url)
    await alice.join(session.id)
    await alice.insert(session.id, 0, 'idle text')
    await alice.request(EVENTS.LEAVE, { doc: session.id })
    await eventually(() => tandem.server.registry.size === 0)
    assert.equal((await tandem.server.registry.store.load(session.id)).updates.length, 1)
    const reply = await alice.join(session.id)
    assert.equal(reply.ok, true)
    assert.equal(alice.text(session.id), 'idle text')
    alice.close()
    await tandem.close()
  })

  it('refuses to serve a document that fails to load, and writes nothing over it', async () => {
    const tandem = await startServer({ dataDir: `${data.dir}/corrupt` })
    const session = await createSession(tandem.url, { content: 'precious' })
    const store = tandem.server.registry.store
    await store.append(session.id, [new Uint8Array([0xde, 0xad, 0xbe, 0xef])])
    const before = await store.load(session.id)

    const alice = new TestEditor(tandem.url)
    const reply = await alice.join(session.id)
    assert.equal(reply.ok, false)
    assert.equal(reply.error.code, 'UNAVAILABLE')
    const rest = await api(tandem.url, `/api/sessions/${session.id}/content`)
    assert.equal(rest.status, 503)
    assert.equal(rest.body.error.code, 'UNAVAILABLE')
    assert.deepEqual(await store.load(session.id), before, 'storage is untouched')
    assert.equal(tandem.server.registry.size, 0, 'the failed document is not cached')
    alice.close()
    await tandem.close()
  })

  it('refuses to serve a document one of whose stored entries does not add up, and writes nothing over it', async () => {
    const tandem = await startServer({ dataDir: `${data.dir}/damaged-entry` })
    const session = await createSession(tandem.url, { content: 'precious' })
    const store = /** @type {import('../server/storage/level-doc-store.js').LevelDocStore} */ (tandem.server.registry.store)
    // An entry of several updates whose first declares 9 bytes and holds 2, as a damaged disk leaves it.
    await store.docs.put(`${session.id}!b!ffffffffffff`, Uint8Array.of(9, 0, 0, 0, 1, 2))
    const entries = () => store.docs.iterator({ gte: `${session.id}!`, lt: `${session.id}!~` }).all()
    const before = await entries()

    const alice = new TestEditor(tandem.url)
    const reply = await alice.join(session.id)
    assert.equal(reply.ok, false)
    assert.equal(reply.error.code, 'UNAVAILABLE')
    const rest = await api(tandem.url, `/api/sessions/${session.id}/content`)
    assert.equal(rest.status, 503, 'never the part of the document that could be read')
    assert.deepEqual(await entries(), before, 'storage is untouched')
    assert.equal(tandem.server.registry.size, 0, 'the failed document is not cached')
    alice.close()
    await tandem.close()
  })

  it('refuses to start on an invalid setting, naming the variable', () => {
    const entry = fileURLToPath(new URL('../server/index.js', import.meta.url))
    const result = spawnSync(process.execPath, [entry], { env: { ...process.env, MAX_UPDATE_BYTES: 'lots' }, encoding: 'utf8' })
    assert.equal(result.status, 2)
    assert.match(result.stderr, /MAX_UPDATE_BYTES="lots" is invalid: expected a whole number/)
  })
})

/** An update that inserts `text` into a new document's content. @param {string} text */
function updateOf (text) {
  const ydoc = new Y.Doc()
  ydoc.getText('content').insert(0, text)
  return Y.encodeStateAsUpdate(ydoc)
}

/**
 * The text of a document as the store reads it.
 * @param {import('../server/storage/level-doc-store.js').LevelDocStore} store
 * @param {string} docId
 */
async function textOf (store, docId) {
  const ydoc = new Y.Doc()
  for (const update of (await store.load(docId)).updates) Y.applyUpdate(ydoc, update)
  return ydoc.getText('content').toString()
}

/** A promise that stays pending until the test releases it. */
function gate () {
  /** @type {() => void} */
  let release = () => {}
  const held = new Promise(resolve => { release = () => resolve(undefined) })
  return { held, release }
}
