import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createSocket } from '../client/src/socket.js'
import { SocketIOProvider } from '../client/src/provider.js'
import * as Y from 'yjs'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { startChildServer } from './helpers/child-server.js'
import { TestEditor, cursorIn } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { BASE, BASE_TEXT } from './helpers/poison-update.js'
import { openDoc } from './helpers/provider.js'
import { api, contentOf, createSession, startServer, tempDataDir } from './helpers/server.js'

// Retries in these tests start at 20 ms so that backoff is exercised without slowing the suite.
const FAST_RETRY = { retryDelayMs: 20, maxRetryDelayMs: 200 }

describe('SocketIOProvider against a real server', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let data
  before(async () => {
    data = await tempDataDir()
    tandem = await startServer({ dataDir: data.dir })
  })
  after(async () => {
    await tandem.close()
    await data.remove()
  })

  it('syncs two editors and reports status, sync and unacknowledged changes', async () => {
    const { id } = await createSession(tandem.url)
    const alice = openDoc(tandem.url, id)
    const bob = openDoc(tandem.url, id)
    await eventually(() => alice.provider.synced && bob.provider.synced)
    alice.append('fn main() {')
    bob.append('// bob\n')
    alice.append('}\n')
    await eventually(() => alice.settled() && bob.settled() && alice.text() === bob.text())
    assert.match(alice.text(), /fn main\(\) \{\}\n/)
    assert.match(alice.text(), /\/\/ bob\n/)
    assert.equal(await contentOf(tandem.url, id), alice.text())
    assert.deepEqual(alice.events.status, ['connecting', 'connected'])
    assert.deepEqual(alice.events.sync, [true])
    assert.ok(Math.max(...alice.events.unsyncedChanges) > 0, 'counted its edits while they were in flight')
    assert.equal(alice.events.unsyncedChanges.at(-1), 0)
    alice.destroy()
    bob.destroy()
  })

  it('sends its token in the Socket.IO handshake', async () => {
    const { id } = await createSession(tandem.url)
    const alice = openDoc(tandem.url, id, { token: 'alice-token' })
    await eventually(() => alice.provider.synced)
    const tokens = [...tandem.server.io.sockets.sockets.values()].map(socket => socket.handshake.auth.token)
    assert.ok(tokens.includes('alice-token'))
    alice.destroy()
  })

  it('gives an editor that joins late the whole document, seeded content included', async () => {
    const { id } = await createSession(tandem.url, { content: 'seed\n' })
    const alice = openDoc(tandem.url, id)
    await eventually(() => alice.provider.synced)
    alice.append('typed by alice\n')
    await eventually(() => alice.settled())
    const late = openDoc(tandem.url, id)
    await eventually(() => late.provider.synced)
    assert.equal(late.text(), 'seed\ntyped by alice\n')
    alice.destroy()
    late.destroy()
  })

  it('keeps edits made while disconnected and sends them once connected again', async () => {
    const { id } = await createSession(tandem.url)
    const alice = openDoc(tandem.url, id)
    const bob = openDoc(tandem.url, id)
    await eventually(() => alice.settled() && bob.settled())
    const aliceSocketId = alice.provider.socket.id
    alice.provider.disconnect()
    assert.equal(alice.provider.status, 'disconnected')
    alice.append('written offline, ')
    alice.append('in two edits')
    assert.equal(alice.provider.unsyncedChanges, 2)
    // Once the server has dropped Alice's socket it can receive nothing more from it; a marker from
    // Carol then reaches Bob after anything Alice's socket had sent, so Bob seeing the marker alone
    // shows nothing was.
    await eventually(() => !tandem.server.io.sockets.sockets.has(/** @type {string} */ (aliceSocketId)), { what: 'Alice\'s socket gone' })
    const carol = openDoc(tandem.url, id)
    await eventually(() => carol.provider.synced)
    carol.append('marker')
    await eventually(() => bob.text().includes('marker'), { what: 'the marker' })
    assert.equal(bob.text(), 'marker', 'nothing is sent while disconnected')
    carol.ytext.delete(0, carol.text().length)
    await eventually(() => carol.settled() && bob.text() === '', { what: 'the marker removed' })
    carol.destroy()
    alice.provider.connect()
    await eventually(() => alice.settled() && bob.text() === 'written offline, in two edits')
    assert.equal(await contentOf(tandem.url, id), 'written offline, in two edits')
    alice.destroy()
    bob.destroy()
  })

  it('carries several documents over one shared connection', async () => {
    const sessions = await Promise.all(['a.js', 'b.js', 'c.js'].map(name => createSession(tandem.url, { name })))
    const connectionsBefore = tandem.server.io.engine.clientsCount
    const socket = createSocket(tandem.url)
    const files = sessions.map(({ id }) => openDoc(tandem.url, id, { socket }))
    const peers = sessions.map(({ id }) => openDoc(tandem.url, id))
    await eventually(() => [...files, ...peers].every(file => file.provider.synced))
    assert.equal(tandem.server.io.engine.clientsCount - connectionsBefore, 1 + peers.length)
    assert.throws(() => new SocketIOProvider(tandem.url, sessions[0].id, files[0].ydoc, { socket }), /already has a provider/)

    files.forEach((file, i) => file.append(`file ${i}`))
    await eventually(() => peers.every((peer, i) => peer.text() === `file ${i}`))
    peers[2].append(' and its peer')
    await eventually(() => files[2].text() === 'file 2 and its peer')

    // Closing one document leaves the connection to the others.
    files[0].destroy()
    assert.equal(socket.connected, true)
    files[1].append('!')
    await eventually(() => peers[1].text() === 'file 1!')
    const { body } = await api(tandem.url, `/api/sessions/${sessions[0].id}`)
    assert.equal(body.editors, 1, 'the first document was left')

    for (const doc of [...files.slice(1), ...peers]) doc.destroy()
    assert.equal(socket.connected, true, 'a shared socket belongs to its creator')
    socket.disconnect()
  })

  it('shares cursors and user info, and removes them when an editor disconnects', async () => {
    const { id } = await createSession(tandem.url)
    const alice = openDoc(tandem.url, id)
    const bob = openDoc(tandem.url, id)
    alice.provider.awareness.setLocalStateField('user', { name: 'Alice', color: '#d33682' })
    await eventually(() => alice.provider.synced && bob.provider.synced)
    bob.provider.awareness.setLocalStateField('user', { name: 'Bob', color: '#268bd2' })
    const aliceId = alice.ydoc.clientID
    const bobId = bob.ydoc.clientID
    await eventually(() => bob.provider.awareness.getStates().get(aliceId)?.user?.name === 'Alice')
    await eventually(() => alice.provider.awareness.getStates().get(bobId)?.user?.name === 'Bob')
    const cursor = cursorIn(alice.ydoc, 1, 3)
    alice.provider.awareness.setLocalStateField('cursor', cursor)
    await eventually(() => JSON.stringify(bob.provider.awareness.getStates().get(aliceId)?.cursor) === JSON.stringify(cursor))

    alice.provider.disconnect()
    await eventually(() => !bob.provider.awareness.getStates().has(aliceId))
    assert.deepEqual([...alice.provider.awareness.getStates().keys()], [aliceId], 'forgets the others while away')
    alice.provider.connect()
    await eventually(() => bob.provider.awareness.getStates().get(aliceId)?.user?.name === 'Alice')
    await eventually(() => alice.provider.awareness.getStates().has(bobId))
    bob.destroy()
    await eventually(() => !alice.provider.awareness.getStates().has(bobId))
    alice.destroy()
  })

  it('reports NOT_FOUND for a session that does not exist and stops trying', async () => {
    const missing = openDoc(tandem.url, 'doesnotexist', FAST_RETRY)
    // Disconnected, with a socket that will not reconnect: nothing is left that could try again.
    await eventually(() => missing.provider.status === 'disconnected' && !missing.provider.socket.active, { what: 'stopped' })
    assert.deepEqual(missing.events.refused.map(({ event, code, retry }) => ({ event, code, retry })),
      [{ event: EVENTS.JOIN, code: 'NOT_FOUND', retry: false }])
    assert.equal(missing.provider.status, 'disconnected')
    assert.equal(missing.provider.socket.connected, false)
    missing.destroy()
  })

  it('backs off and retries a full room until a slot frees up', async () => {
    const { id } = await createSession(tandem.url, { maxEditors: 1 })
    const alice = openDoc(tandem.url, id)
    await eventually(() => alice.provider.synced)
    const bob = openDoc(tandem.url, id, FAST_RETRY)
    await eventually(() => bob.events.refused.length >= 3)
    assert.ok(bob.events.refused.every(({ code, retry }) => code === 'ROOM_FULL' && retry))
    assert.equal(bob.provider.status, 'connecting')
    bob.append('queued while the room was full')
    alice.destroy()
    await eventually(() => bob.settled())
    assert.equal(await contentOf(tandem.url, id), 'queued while the room was full')
    bob.destroy()
  })

  it('stops for good when its session is deleted', async () => {
    const { id } = await createSession(tandem.url)
    const alice = openDoc(tandem.url, id, FAST_RETRY)
    await eventually(() => alice.provider.synced)
    assert.equal((await api(tandem.url, `/api/sessions/${id}`, { method: 'DELETE' })).status, 204)
    // Disconnected, with a socket that will not reconnect: nothing is left that could join again.
    await eventually(() => alice.provider.status === 'disconnected' && !alice.provider.socket.active, { what: 'stopped' })
    assert.deepEqual(alice.events.closed, ['deleted'])
    assert.equal(alice.provider.status, 'disconnected')
    assert.deepEqual(alice.events.refused, [], 'it did not try to join again')
    alice.destroy()
  })

  it('rejoins at once when the server reloads the document, and keeps editing', async () => {
    const { id } = await createSession(tandem.url)
    const mallory = new TestEditor(tandem.url)
    await mallory.join(id)
    for (const update of BASE) assert.deepEqual(await mallory.request(EVENTS.UPDATE, { doc: id, update }), { ok: true })
    const alice = openDoc(tandem.url, id)
    await eventually(() => alice.provider.synced && alice.text() === BASE_TEXT)
    const statuses = alice.events.status.length

    // The update check refuses every update known to fail while applying, so the reload is made
    // here as the registry makes it after such a failure or a refused write.
    await tandem.server.registry.invalidate(/** @type {any} */ (tandem.server.registry.get(id)))
    await eventually(() => alice.events.closed.length > 0 && alice.provider.status === 'connected')
    assert.deepEqual(alice.events.closed, ['reload'])
    assert.deepEqual(alice.events.status.slice(statuses), ['connecting', 'connected'])
    alice.ytext.insert(0, '>')
    await eventually(() => alice.settled())
    assert.equal(await contentOf(tandem.url, id), `>${BASE_TEXT}`)
    alice.destroy()
    mallory.close()
  })
})

describe('SocketIOProvider and the server limits', () => {
  /**
   * What a socket sends, in order: event names, and the size of each update.
   * @param {import('../client/src/socket.js').TandemSocket} socket
   */
  function recordSent (socket) {
    /** @type {{ event: string, bytes: number }[]} */
    const sent = []
    socket.onAnyOutgoing((event, payload) => sent.push({ event, bytes: payload?.update?.byteLength ?? 0 }))
    return {
      sent,
      joins: () => sent.filter(({ event }) => event === EVENTS.JOIN).length,
      /** @param {number} [from] an index into `sent` */
      updates: (from = 0) => sent.slice(from).filter(({ event }) => event === EVENTS.UPDATE)
    }
  }

  /** @param {{ code: string }[]} refusals */
  const codes = refusals => [...new Set(refusals.map(({ code }) => code))]

  it('keeps an update refused as TOO_LARGE, holds later edits without rejoining, and stores them once the limit is raised', async () => {
    const data = await tempDataDir()
    let tandem = await startServer({ dataDir: data.dir, maxUpdateBytes: 1024 })
    const { id } = await createSession(tandem.url)
    // Reconnects quickly once the server is back with a higher limit.
    const socket = createSocket(tandem.url, { reconnectionDelay: 50, reconnectionDelayMax: 100 })
    const record = recordSent(socket)
    const alice = openDoc(tandem.url, id, { socket, ...FAST_RETRY })
    /** @type {(string | null)[]} */
    const blocked = []
    alice.provider.on('blocked', refusal => blocked.push(refusal?.code ?? null))
    await eventually(() => alice.provider.synced)

    const big = 'x'.repeat(4096)
    alice.append(big)
    // Sent before the refusal is known: it comes back OUT_OF_SYNC, which must not start a rejoin.
    alice.append(' and more')
    await eventually(() => alice.events.refused.length > 0)
    const mark = record.sent.length
    alice.append(' after it')
    await eventually(() => alice.events.refused.length >= 4)
    // A rejoin would go out at once on the OUT_OF_SYNC reply, before the next retry of the refused
    // update: with one more retry seen, anything that was going to be sent before it has been.
    const retriesSeen = record.updates(mark).length
    await eventually(() => record.updates(mark).length > retriesSeen, { what: 'one more retry' })
    assert.deepEqual(codes(alice.events.refused), ['TOO_LARGE'])
    assert.ok(alice.events.refused.every(({ event, retry }) => event === EVENTS.UPDATE && retry))
    assert.equal(alice.provider.blockedBy?.code, 'TOO_LARGE')
    assert.deepEqual(blocked, ['TOO_LARGE'])
    assert.ok(alice.provider.unsyncedChanges >= 2, 'the refused update and the edits behind it are kept')
    assert.equal(record.joins(), 1, 'it did not rejoin')
    const retries = record.updates(mark)
    assert.ok(retries.length >= 3, 'the refused update is retried')
    assert.ok(retries.every(({ bytes }) => bytes > 4096), 'the later edits are held, not sent alone')
    assert.equal(alice.provider.status, 'connected')
    assert.equal(await contentOf(tandem.url, id), '')

    const { port } = new URL(tandem.url)
    await tandem.close()
    tandem = await startServer({ dataDir: data.dir, port: Number(port), maxUpdateBytes: 64 * 1024 })
    await eventually(() => alice.settled() && alice.provider.blockedBy === null)
    assert.deepEqual(blocked, ['TOO_LARGE', null])
    assert.equal(await contentOf(tandem.url, id), `${big} and more after it`)
    alice.destroy()
    socket.disconnect()
    await tandem.close()
    await data.remove()
  })

  it('backs off rejoining while its own update keeps making the server reload, and stores it once the server can write', async (t) => {
    const tandem = await startServer()
    t.after(() => tandem.close())
    const { id } = await createSession(tandem.url, { content: 'x' })
    const alice = openDoc(tandem.url, id, { retryDelayMs: 100, maxRetryDelayMs: 1000 })
    t.after(() => alice.destroy())
    const { joins } = recordSent(alice.provider.socket)
    await eventually(() => alice.provider.synced)
    // Storage refuses every write: each of alice's updates is applied, refused, and the document reloaded.
    const { store } = tandem.server.registry
    const append = store.append.bind(store)
    let failing = true
    store.append = async (/** @type {string} */ docId, /** @type {Uint8Array[]} */ updates) => {
      if (failing) throw new Error('no space left on device')
      return append(docId, updates)
    }
    alice.append('!')
    await eventually(() => alice.events.closed.length > 0)
    await new Promise(resolve => setTimeout(resolve, 3000))
    // Backing off from 100 ms, doubling up to 1 s: a handful in 3 s, where rejoining at once made hundreds.
    t.diagnostic(`${joins()} joins, ${alice.events.closed.length} reloads in 3 s`)
    assert.ok(joins() <= 10, `${joins()} joins in 3 s`)
    failing = false
    await eventually(() => alice.settled(), { timeoutMs: 5000 })
    assert.equal(await contentOf(tandem.url, id), 'x!')
  })

  it('holds later edits while an update waits out RATE_LIMITED, and rejoins for none of them', async (t) => {
    const tandem = await startServer({ updatesPerSecond: 5 })
    t.after(() => tandem.close())
    const { id } = await createSession(tandem.url)
    const alice = openDoc(tandem.url, id)
    t.after(() => alice.destroy())
    const { joins } = recordSent(alice.provider.socket)
    await eventually(() => alice.provider.synced)
    let typed = ''
    // 20 keystrokes a second for 3 s, four times what the server takes.
    for (let i = 0; i < 60; i++) {
      const char = String.fromCharCode(97 + i % 26)
      alice.append(char)
      typed += char
      await new Promise(resolve => setTimeout(resolve, 50))
    }
    await eventually(() => alice.settled(), { timeoutMs: 10000 })
    assert.ok(alice.events.refused.some(({ code }) => code === 'RATE_LIMITED'))
    assert.equal(joins(), 1, 'no rejoin')
    assert.equal(await contentOf(tandem.url, id), typed)
  })

  it('stays blocked by an update refused for good, reporting what is not saved, without rejoining', async (t) => {
    const tandem = await startServer()
    t.after(() => tandem.close())
    const { id } = await createSession(tandem.url, { content: 'before ' })
    const [alice, bob] = [openDoc(tandem.url, id), openDoc(tandem.url, id)]
    t.after(() => { alice.destroy(); bob.destroy() })
    const { joins } = recordSent(alice.provider.socket)
    await eventually(() => alice.provider.synced && bob.provider.synced)
    // A root type the server does not allow (ROOT_TYPES): INVALID_UPDATE, whatever comes with it.
    alice.ydoc.getMap('meta').set('title', 'x')
    await eventually(() => alice.provider.blockedBy !== null)
    assert.equal(alice.provider.blockedBy?.code, 'INVALID_UPDATE')
    assert.equal(alice.provider.blockedBy?.retry, false)
    alice.append('one two')
    bob.ytext.insert(0, '>')
    await eventually(() => alice.text() === '>before one two', { what: 'bob\'s edit reaches alice' })
    assert.equal(alice.provider.unsyncedChanges, 2, 'the refused update and the edit held behind it')
    assert.equal(joins(), 1, 'no rejoin')
    assert.equal(await contentOf(tandem.url, id), '>before ')
  })

  it('keeps an update that would take the document past MAX_DOC_BYTES, without rejoining in a loop', async () => {
    const tandem = await startServer({ maxDocBytes: 1024 })
    const { id } = await createSession(tandem.url)
    const alice = openDoc(tandem.url, id, FAST_RETRY)
    const record = recordSent(alice.provider.socket)
    await eventually(() => alice.provider.synced)
    alice.append('a'.repeat(600))
    await eventually(() => alice.settled())

    alice.append('b'.repeat(600))
    await eventually(() => alice.events.refused.length > 0)
    const mark = record.sent.length
    alice.append('c')
    await eventually(() => alice.events.refused.length >= 4)
    // A rejoin would go out at once on the OUT_OF_SYNC reply, before the next retry of the refused
    // update: with one more retry seen, anything that was going to be sent before it has been.
    const retriesSeen = record.updates(mark).length
    await eventually(() => record.updates(mark).length > retriesSeen, { what: 'one more retry' })
    assert.deepEqual(codes(alice.events.refused), ['TOO_LARGE'])
    assert.equal(alice.provider.blockedBy?.code, 'TOO_LARGE')
    assert.ok(alice.provider.unsyncedChanges >= 1)
    assert.equal(record.joins(), 1, 'it did not rejoin')
    assert.ok(record.updates(mark).every(({ bytes }) => bytes > 600), 'the later edit is held, not sent alone')
    assert.equal(await contentOf(tandem.url, id), 'a'.repeat(600))
    alice.destroy()
    await tandem.close()
  })

  it('sends many small offline edits as several updates within maxUpdateBytes, and the editors converge', async () => {
    const tandem = await startServer({ maxUpdateBytes: 1024 })
    const { id } = await createSession(tandem.url)
    const alice = openDoc(tandem.url, id, FAST_RETRY)
    const bob = openDoc(tandem.url, id)
    const record = recordSent(alice.provider.socket)
    await eventually(() => alice.settled() && bob.settled())
    alice.provider.disconnect()
    for (let i = 0; i < 40; i++) alice.append(`line ${i} ${'-'.repeat(40)}\n`)
    const offline = alice.text()
    const mark = record.sent.length
    alice.provider.connect()
    await eventually(() => alice.settled() && bob.text() === offline)
    assert.deepEqual(alice.events.refused, [])
    const sent = record.updates(mark)
    assert.ok(sent.length >= 2, `${sent.length} updates`)
    assert.ok(sent.every(({ bytes }) => bytes <= 1024), 'each within the limit')
    assert.ok(sent.reduce((sum, { bytes }) => sum + bytes, 0) > 1024, 'more than one update can carry')
    assert.equal(await contentOf(tandem.url, id), offline)
    alice.destroy()
    bob.destroy()
    await tandem.close()
  })
})

describe('SocketIOProvider across a server crash', () => {
  it('resends unacknowledged updates after the server is killed and restarted on the same port', async () => {
    const data = await tempDataDir()
    let server = await startChildServer({ DATA_DIR: data.dir })
    const { port } = new URL(server.url)
    const { id } = await createSession(server.url)
    const alice = openDoc(server.url, id)
    await eventually(() => alice.provider.synced)
    alice.append('before the crash\n')
    await eventually(() => alice.settled())

    // A burst of edits, then SIGKILL before any of their ACKs can come back: some may be stored,
    // none is acknowledged.
    for (let i = 0; i < 20; i++) alice.append(`<${i}>`)
    const unacked = alice.provider.unsyncedChanges
    await server.stop('SIGKILL')
    assert.equal(unacked, 20)
    await eventually(() => alice.provider.status === 'connecting')
    alice.append('\nwhile the server was down')

    server = await startChildServer({ DATA_DIR: data.dir, PORT: port })
    await eventually(() => alice.settled(), { timeoutMs: 15000 })
    const expected = 'before the crash\n' + Array.from({ length: 20 }, (_, i) => `<${i}>`).join('') + '\nwhile the server was down'
    assert.equal(alice.text(), expected)
    assert.equal(await contentOf(server.url, id), expected)
    const bob = openDoc(server.url, id)
    await eventually(() => bob.provider.synced)
    assert.equal(bob.text(), expected)
    alice.destroy()
    bob.destroy()
    await server.stop('SIGTERM')
    await data.remove()
  })
})

describe('SocketIOProvider against limits and auth', () => {
  const AUTH = { authSecret: 'provider-test-secret-of-32-characters!', apiKey: 'provider-api-key-0123' }
  const KEY = { authorization: `Bearer ${AUTH.apiKey}` }
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  before(async () => { tandem = await startServer({ updatesPerSecond: 5, ...AUTH }) })
  after(async () => { await tandem.close() })

  const newSession = async () => (await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'p' }, headers: KEY })).body.id
  /** @param {string} id @param {string} user @param {'editor' | 'viewer'} role */
  const tokenFor = async (id, user, role) => (await api(tandem.url, `/api/sessions/${id}/tokens`, { method: 'POST', body: { user, role }, headers: KEY })).body

  it('keeps updates refused as RATE_LIMITED and resends them after the wait it was given', async () => {
    const id = await newSession()
    const alice = openDoc(tandem.url, id, { token: (await tokenFor(id, 'alice', 'editor')).token, ...FAST_RETRY })
    await eventually(() => alice.provider.synced)
    const typed = 'thirty keystrokes, typed fast'
    for (const char of typed) alice.append(char)
    await eventually(() => alice.settled(), { timeoutMs: 10000 })
    assert.ok(alice.events.refused.some(({ code, retry }) => code === 'RATE_LIMITED' && retry))
    assert.equal(await api(tandem.url, `/api/sessions/${id}/content`, { headers: KEY }).then(res => res.body), typed)
    alice.destroy()
  })

  it('rejoins after OUT_OF_SYNC and sends the part the server lacks', async () => {
    const id = await newSession()
    const alice = openDoc(tandem.url, id, { token: (await tokenFor(id, 'alice', 'editor')).token, ...FAST_RETRY })
    await eventually(() => alice.provider.synced)
    // As if a broadcast had reached alice and then been lost by the server (a crash before storing).
    const lost = new Y.Doc()
    lost.getText(TEXT_NAME).insert(0, 'lost ')
    Y.applyUpdate(alice.ydoc, Y.encodeStateAsUpdate(lost), alice.provider)
    alice.append('and found')
    await eventually(() => alice.settled())
    assert.equal(await api(tandem.url, `/api/sessions/${id}/content`, { headers: KEY }).then(res => res.body), 'lost and found')
    alice.destroy()
  })

  it('backs off, with jitter, rejoining a document it cannot get in sync, instead of rejoining in a loop', async (t) => {
    // No join limit: it alone would space the joins out.
    const server = await startServer({ joinsPerMinute: 0 })
    t.after(() => server.close())
    const { id } = await createSession(server.url)
    const alice = openDoc(server.url, id, { missingGraceMs: 20, retryDelayMs: 100, maxRetryDelayMs: 1000, connect: false })
    t.after(() => alice.destroy())
    // A received update that builds on one nobody has: no join can bring what it lacks.
    const orphan = new Y.Doc()
    /** @type {Uint8Array[]} */
    const updates = []
    orphan.on('update', (/** @type {Uint8Array} */ update) => updates.push(update))
    orphan.getText(TEXT_NAME).insert(0, 'a')
    orphan.getText(TEXT_NAME).insert(1, 'b')
    Y.applyUpdate(alice.ydoc, updates[1], alice.provider)
    let joins = 0
    alice.provider.socket.onAnyOutgoing(event => { if (event === EVENTS.JOIN) joins++ })
    alice.provider.connect()
    await new Promise(resolve => setTimeout(resolve, 3000))
    // Every 20 ms without a backoff; from 100 ms doubling to 1 s, a handful.
    t.diagnostic(`${joins} joins in 3 s`)
    assert.ok(joins >= 3 && joins <= 10, `${joins} joins in 3 s`)
    assert.equal(alice.provider.synced, false)
  })

  it('joins as a viewer: reads everything and sends no document update, so nothing is refused', async () => {
    const id = await newSession()
    const alice = openDoc(tandem.url, id, { token: (await tokenFor(id, 'alice', 'editor')).token })
    const victor = openDoc(tandem.url, id, { token: (await tokenFor(id, 'victor', 'viewer')).token, connect: false })
    /** @type {string[]} */
    const sent = []
    victor.provider.socket.onAnyOutgoing(event => sent.push(event))
    victor.provider.connect()
    await eventually(() => alice.provider.synced && victor.provider.synced)
    assert.equal(victor.provider.role, 'viewer')
    assert.equal(alice.provider.role, 'editor')
    alice.append('from alice')
    await eventually(() => victor.text() === 'from alice')
    // A local edit (the page makes its editor read-only; a script might not) stays local.
    victor.append(' vandalism')
    assert.equal(victor.provider.unsyncedChanges, 1, 'kept, not sent')
    // socket.io-client reports an emit to onAnyOutgoing synchronously: a sent update would be listed by now.
    assert.ok(sent.includes(EVENTS.JOIN))
    assert.ok(!sent.includes(EVENTS.UPDATE), `the viewer sent ${sent.join(', ')}`)
    assert.deepEqual(victor.events.refused, [])
    assert.equal(await api(tandem.url, `/api/sessions/${id}/content`, { headers: KEY }).then(res => res.body), 'from alice')
    alice.destroy()
    victor.destroy()
  })

  it('stops when its token is revoked, and reports a refused handshake', async () => {
    const id = await newSession()
    const minted = await tokenFor(id, 'alice', 'editor')
    const alice = openDoc(tandem.url, id, { token: minted.token })
    await eventually(() => alice.provider.synced)
    await api(tandem.url, `/api/sessions/${id}/tokens/${minted.tokenId}`, { method: 'DELETE', headers: KEY })
    await eventually(() => alice.events.closed.includes('revoked'))
    assert.equal(alice.provider.status, 'disconnected')
    alice.destroy()

    const stranger = openDoc(tandem.url, id, { token: 'forged' })
    await eventually(() => stranger.events.refused.some(({ event, code }) => event === 'connect' && code === 'UNAUTHORIZED'))
    stranger.destroy()
  })
})
