import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import pino from 'pino'
import * as Y from 'yjs'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { MAX_CLIENTS_PER_CONNECTION } from '../server/documents/awareness-states.js'
import { TestEditor, awarenessUpdate, awarenessUpdates } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { closedWithin, rawWebSocket } from './helpers/raw-engine.js'
import { api, contentOf, createSession, manualClock, startServer } from './helpers/server.js'

describe('per-IP limits', () => {
  it('refuses REST requests past REST_PER_MINUTE with 429 and Retry-After', async () => {
    const tandem = await startServer({ restPerMinute: 5 })
    const statuses = []
    for (let i = 0; i < 7; i++) statuses.push((await api(tandem.url, '/api/sessions')).status)
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429])
    const refused = await api(tandem.url, '/api/sessions')
    assert.equal(refused.body.error.code, 'RATE_LIMITED')
    assert.ok(Number(refused.headers.get('retry-after')) >= 1)
    assert.equal((await api(tandem.url, '/api/health')).status, 200, 'health checks are not limited')
    await tandem.close()
  })

  it('counts a request to a session\'s content once against REST_PER_MINUTE, as any other', async () => {
    const tandem = await startServer({ restPerMinute: 4 })
    const { id } = await createSession(tandem.url)
    const statuses = []
    for (let i = 0; i < 4; i++) {
      statuses.push((await api(tandem.url, `/api/sessions/${id}/content`, { method: 'PUT', body: { text: `v${i}` } })).status)
    }
    assert.deepEqual(statuses, [200, 200, 200, 429], 'the create, then three changes')
    await tandem.close()
  })

  it('counts an IPv6 client by its /64, and an IPv4-mapped address as the IPv4 one', async () => {
    const tandem = await startServer({ restPerMinute: 3, trustProxy: 1 })
    const from = (/** @type {string} */ address) => api(tandem.url, '/api/sessions', { headers: { 'x-forwarded-for': address } })
    const statuses = []
    // Six addresses of one /64: one budget of three.
    for (let i = 1; i <= 6; i++) statuses.push((await from(`2001:db8:1:2::${i.toString(16)}`)).status)
    assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429])
    assert.equal((await from('2001:db8:1:3::1')).status, 200, 'the next /64 has its own')
    for (let i = 0; i < 3; i++) assert.equal((await from('203.0.113.7')).status, 200)
    assert.equal((await from('::ffff:203.0.113.7')).status, 429, 'the same IPv4 client')
    await tandem.close()
  })

  it('caps open connections per address, and frees the seat on disconnect', async () => {
    const tandem = await startServer({ maxConnectionsPerIp: 2 })
    const [a, b] = [new TestEditor(tandem.url), new TestEditor(tandem.url)]
    await Promise.all([a.connected(), b.connected()])
    const c = new TestEditor(tandem.url)
    const refused = await c.connectError()
    assert.equal(refused.data.code, 'RATE_LIMITED')
    a.close()
    // The seat is freed on the same transport close that removes the socket from the namespace.
    await eventually(() => tandem.server.io.of('/').sockets.size === 1, { what: 'the closed connection gone' })
    const d = new TestEditor(tandem.url)
    await d.connected()
    for (const e of [b, c, d]) e.close()
    await tandem.close()
  })

  it('closes Engine.IO connections that never send a Socket.IO CONNECT past MAX_CONNECTIONS_PER_IP waiting at once', async () => {
    const tandem = await startServer({ maxConnectionsPerIp: 3, connectionsPerMinute: 0 })
    const waiting = [await rawWebSocket(tandem.url), await rawWebSocket(tandem.url), await rawWebSocket(tandem.url)]
    const extra = await rawWebSocket(tandem.url)
    await closedWithin(extra)
    for (const ws of waiting) assert.equal(ws.readyState, ws.OPEN, 'the first three wait on')
    for (const ws of waiting) ws.close()
    await eventually(() => Object.keys(/** @type {any} */ (tandem.server.io.engine).clients).length === 0, { what: 'the waiting connections gone' })
    // Their places are free again, and a connection that sends its CONNECT takes none of them.
    const editors = [new TestEditor(tandem.url), new TestEditor(tandem.url), new TestEditor(tandem.url)]
    await Promise.all(editors.map(e => e.connected()))
    const after = await rawWebSocket(tandem.url)
    assert.equal(after.readyState, after.OPEN)
    after.close()
    for (const e of editors) e.close()
    await tandem.close()
  })

  it('caps new connections per address per minute', async () => {
    const tandem = await startServer({ connectionsPerMinute: 3 })
    const editors = [0, 1, 2].map(() => new TestEditor(tandem.url))
    await Promise.all(editors.map(e => e.connected()))
    const fourth = new TestEditor(tandem.url)
    assert.equal((await fourth.connectError()).data.code, 'RATE_LIMITED')
    for (const e of [...editors, fourth]) e.close()
    await tandem.close()
  })

  it('caps joins per address per minute', async () => {
    const tandem = await startServer({ joinsPerMinute: 3 })
    const { id } = await createSession(tandem.url)
    const editor = new TestEditor(tandem.url)
    const replies = []
    for (let i = 0; i < 5; i++) replies.push(await editor.join(id))
    assert.deepEqual(replies.map(r => r.ok ? 'ok' : r.error.code), ['ok', 'ok', 'ok', 'RATE_LIMITED', 'RATE_LIMITED'])
    editor.close()
    await tandem.close()
  })
})

describe('per-connection limits', () => {
  it('refuses updates past UPDATES_PER_SECOND, applies none of the refused, and keeps order', async () => {
    // The rate's clock stands still unless moved: no refill between the twenty, however slow the machine.
    const clock = manualClock()
    const tandem = await startServer({ updatesPerSecond: 5 }, { now: clock.now })
    const { id } = await createSession(tandem.url)
    const [alice, bob] = [new TestEditor(tandem.url), new TestEditor(tandem.url)]
    await alice.join(id)
    await bob.join(id)
    // Twenty edits at once, each on top of the previous: the first five pass, the rest are refused.
    const updates = typing(20)
    const replies = await Promise.all(updates.map(update => alice.request(EVENTS.UPDATE, { doc: id, update })))
    const codes = replies.map(r => r.ok ? 'ok' : r.error.code)
    assert.deepEqual(codes, [...Array(5).fill('ok'), ...Array(15).fill('RATE_LIMITED')])
    const retryAfter = replies[5].error.details.retryAfterMs
    assert.equal(retryAfter, 200, 'one token of 5 a second')
    assert.equal(await contentOf(tandem.url, id), 'abcde')
    await eventually(() => bob.text(id) === 'abcde')
    // After the wait it was given, the client resends the first refused update, and it lands.
    clock.advance(retryAfter / 2)
    assert.equal((await alice.request(EVENTS.UPDATE, { doc: id, update: updates[5] })).error?.code, 'RATE_LIMITED', 'not before')
    clock.advance(retryAfter / 2)
    assert.deepEqual(await alice.request(EVENTS.UPDATE, { doc: id, update: updates[5] }), { ok: true })
    await eventually(() => bob.text(id) === 'abcdef')
    for (const e of [alice, bob]) e.close()
    await tandem.close()
  })

  it('refuses bytes past BYTES_PER_SECOND', async () => {
    const tandem = await startServer({ bytesPerSecond: 4096, maxUpdateBytes: 4096 })
    const { id } = await createSession(tandem.url)
    const alice = new TestEditor(tandem.url)
    await alice.join(id)
    assert.deepEqual(await alice.insert(id, 0, 'x'.repeat(3000)), { ok: true })
    const refused = await alice.insert(id, 0, 'y'.repeat(3000))
    assert.equal(refused.error.code, 'RATE_LIMITED')
    assert.equal(refused.error.details.limit, 'bytes per second')
    assert.equal((await contentOf(tandem.url, id)).length, 3000)
    alice.close()
    await tandem.close()
  })

  it('refuses awareness past AWARENESS_PER_SECOND', async () => {
    const clock = manualClock()
    const tandem = await startServer({ awarenessPerSecond: 3, awarenessIntervalMs: 0 }, { now: clock.now })
    const { id } = await createSession(tandem.url)
    const [alice, bob] = [new TestEditor(tandem.url), new TestEditor(tandem.url)]
    await alice.join(id)
    await bob.join(id)
    const replies = []
    for (let clock = 1; clock <= 6; clock++) {
      replies.push(await alice.request(EVENTS.AWARENESS, { doc: id, update: awarenessUpdate(5, clock, { user: { name: `move ${clock}` } }) }))
    }
    assert.deepEqual(replies.map(r => r.ok ? 'ok' : r.error.code), ['ok', 'ok', 'ok', 'RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED'])
    // A marker relayed after the refused ones: once Bob has it, anything relayed before it is there too.
    clock.advance(1000)
    assert.deepEqual(await alice.request(EVENTS.AWARENESS, { doc: id, update: awarenessUpdate(5, 7, { user: { name: 'marker' } }) }), { ok: true })
    const awareness = () => bob.received.filter(r => r.event === EVENTS.AWARENESS)
    await eventually(() => awareness().length >= 4, { what: 'the marker relayed' })
    assert.equal(awareness().length, 4, 'the three accepted, then the marker')
    for (const e of [alice, bob]) e.close()
    await tandem.close()
  })

  it('refuses an update that would take the document past MAX_DOC_BYTES', async () => {
    const tandem = await startServer({ maxDocBytes: 4096 })
    const { id } = await createSession(tandem.url)
    const alice = new TestEditor(tandem.url)
    await alice.join(id)
    assert.deepEqual(await alice.insert(id, 0, 'a'.repeat(3000)), { ok: true })
    const refused = await alice.insert(id, 0, 'b'.repeat(2000))
    assert.equal(refused.error.code, 'TOO_LARGE')
    assert.match(refused.error.message, /document would exceed 4096 bytes/)
    assert.equal((await contentOf(tandem.url, id)).length, 3000)
    alice.close()
    await tandem.close()
  })
})

describe('awareness client ids', () => {
  it('cannot be spoken for by another user', async () => {
    const tandem = await startServer({ authSecret: 'x'.repeat(32), apiKey: 'k'.repeat(16) })
    const headers = { authorization: `Bearer ${'k'.repeat(16)}` }
    const { body: { id } } = await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 's' }, headers })
    const token = async (/** @type {string} */ user) => (await api(tandem.url, `/api/sessions/${id}/tokens`, { method: 'POST', body: { user, role: 'editor' }, headers })).body.token
    const alice = new TestEditor(tandem.url, { auth: { token: await token('alice') } })
    const mallory = new TestEditor(tandem.url, { auth: { token: await token('mallory') } })
    const bob = new TestEditor(tandem.url, { auth: { token: await token('bob') } })
    for (const e of [alice, mallory, bob]) await e.join(id)
    assert.deepEqual(await alice.request(EVENTS.AWARENESS, { doc: id, update: awarenessUpdate(11, 1, { name: 'alice' }) }), { ok: true })
    const spoofed = await mallory.request(EVENTS.AWARENESS, { doc: id, update: awarenessUpdate(11, 2, null) })
    assert.equal(spoofed.error.code, 'FORBIDDEN')
    // Alice reconnecting (a new connection, same user) takes her id over.
    const aliceAgain = new TestEditor(tandem.url, { auth: { token: await token('alice') } })
    await aliceAgain.join(id)
    assert.deepEqual(await aliceAgain.request(EVENTS.AWARENESS, { doc: id, update: awarenessUpdate(11, 3, { name: 'alice' }) }), { ok: true })
    const late = new TestEditor(tandem.url, { auth: { token: await token('carol') } })
    const joined = await late.join(id)
    assert.ok(joined.awareness.byteLength > 1, 'alice is still present for a joiner')
    for (const e of [alice, mallory, bob, aliceAgain, late]) e.close()
    await tandem.close()
  })

  it('are held to MAX_CLIENTS_PER_CONNECTION per connection, and removals do not pile up', async () => {
    const tandem = await startServer({ awarenessPerSecond: 0, bytesPerSecond: 0, awarenessIntervalMs: 0 })
    const { id } = await createSession(tandem.url)
    const [alice, flooder] = [new TestEditor(tandem.url), new TestEditor(tandem.url)]
    for (const e of [alice, flooder]) await e.join(id)
    const doc = /** @type {import('../server/documents/live-doc.js').LiveDoc} */ (tandem.server.registry.get(id))

    // One message announcing 50,000 cursors is refused whole.
    const many = awarenessUpdates(Array.from({ length: 50_000 }, (_, i) => [1000 + i, 1, { n: i }]))
    const refused = await flooder.request(EVENTS.AWARENESS, { doc: id, update: many })
    assert.equal(refused.error.code, 'RATE_LIMITED')
    assert.equal(doc.awareness.size, 0, 'nothing of it is held')

    // Announcing and removing fresh ids, over and over, keeps a bounded number of removals.
    for (let round = 0; round < 40; round++) {
      const ids = Array.from({ length: MAX_CLIENTS_PER_CONNECTION }, (_, i) => 100_000 + round * 100 + i)
      assert.deepEqual(await flooder.request(EVENTS.AWARENESS, { doc: id, update: awarenessUpdates(ids.map(c => [c, 1, { round }])) }), { ok: true })
      assert.deepEqual(await flooder.request(EVENTS.AWARENESS, { doc: id, update: awarenessUpdates(ids.map(c => [c, 2, null])) }), { ok: true })
    }
    assert.ok(doc.awareness.size <= 1024, `${doc.awareness.size} client ids held`)

    // The honest editor's cursor still goes through and reaches the flooder's peers.
    assert.deepEqual(await alice.request(EVENTS.AWARENESS, { doc: id, update: awarenessUpdate(7, 1, { name: 'alice' }) }), { ok: true })
    const late = new TestEditor(tandem.url)
    const joined = await late.join(id)
    assert.ok(joined.awareness.byteLength > 1 && joined.awareness.byteLength < 100, 'a joiner gets alice and none of the removed')
    for (const e of [alice, flooder, late]) e.close()
    await tandem.close()
  })
})

/** The updates of typing `count` letters (a, b, c, …) into an empty document, one per keystroke. @param {number} count */
function typing (count) {
  const ydoc = new Y.Doc()
  /** @type {Uint8Array[]} */
  const updates = []
  ydoc.on('update', (/** @type {Uint8Array} */ update) => updates.push(update))
  for (let i = 0; i < count; i++) ydoc.getText(TEXT_NAME).insert(i, String.fromCharCode(97 + i))
  return updates
}

/** Stops reading the editor's WebSocket: what the server sends it waits in the server. @param {TestEditor} editor */
function stopReading (editor) {
  const tcp = /** @type {import('node:net').Socket} */ (/** @type {any} */ (editor.socket.io.engine.transport).ws._socket)
  tcp.pause()
}

describe('a client that stops reading', () => {
  it('is dropped once the server has queued MAX_BUFFERED_BYTES for it; the others never wait', async (t) => {
    const MiB = 1024 * 1024
    const tandem = await startServer({ maxBufferedBytes: MiB, maxUpdateBytes: 512 * 1024, awarenessPerSecond: 0, awarenessIntervalMs: 0, bytesPerSecond: 0 })
    const { id } = await createSession(tandem.url)
    const [alice, bob, slow] = [new TestEditor(tandem.url), new TestEditor(tandem.url), new TestEditor(tandem.url)]
    for (const e of [alice, bob, slow]) await e.join(id)
    assert.equal(tandem.server.registry.editorCount(id), 3)
    // The slow client's socket stops reading: what the server sends piles up in its queue.
    stopReading(slow)

    const paused = performance.now()
    // The most awareness one message may carry: a connection's every client, each with the largest
    // state that passes the checks (a long name, positions of the largest numbers).
    const far = { type: { client: Number.MAX_SAFE_INTEGER, clock: Number.MAX_SAFE_INTEGER }, tname: TEXT_NAME, item: { client: Number.MAX_SAFE_INTEGER, clock: Number.MAX_SAFE_INTEGER }, assoc: 0 }
    const state = { user: { name: '字'.repeat(64) }, cursor: { anchor: far, head: far }, selection: { anchor: far, head: far } }
    const clients = Array.from({ length: MAX_CLIENTS_PER_CONNECTION }, (_, i) => 21 + i)
    const sent = 100 * Math.ceil(25 * MiB / (100 * clients.length * Buffer.byteLength(JSON.stringify(state)))) // 25 MiB to each reader
    for (let clock = 1; clock <= sent; clock++) {
      alice.socket.emit(EVENTS.AWARENESS, { doc: id, update: awarenessUpdates(clients.map(c => [c, clock, state])) })
      if (clock % 100 === 0) await eventually(() => bob.received.filter(r => r.event === EVENTS.AWARENESS).length >= clock, { timeoutMs: 10000 })
    }
    await eventually(() => tandem.server.registry.editorCount(id) === 2, { timeoutMs: 5000 })
    t.diagnostic(`dropped ${Math.round(performance.now() - paused)} ms after it stopped reading`)
    assert.equal(tandem.server.io.of('/').sockets.size, 2)
    assert.equal(bob.received.filter(r => r.event === EVENTS.AWARENESS).length, sent, 'bob got every message')
    const metrics = await (await fetch(`${tandem.url}/metrics`)).text()
    assert.match(metrics, /tandem_slow_consumers_dropped_total\{[^}]*\} 1/)
    for (const e of [alice, bob, slow]) e.close()
    await tandem.close()
  })

  it('is dropped, the document sent at most a few times, when it asks for a document again and again', async (t) => {
    const MiB = 1024 * 1024
    /** @type {string[]} */
    const logLines = []
    const logger = pino({ level: 'info' }, new Writable({ write (chunk, encoding, done) { logLines.push(String(chunk)); done() } }))
    const tandem = await startServer({ maxBufferedBytes: MiB, bytesPerSecond: 0, joinsPerMinute: 0 }, { logger })
    const { id } = await createSession(tandem.url)
    const [alice, slow] = [new TestEditor(tandem.url), new TestEditor(tandem.url)]
    for (const e of [alice, slow]) await e.join(id)
    const text = 'x'.repeat(600 * 1024)
    assert.deepEqual(await alice.insert(id, 0, text), { ok: true })
    await eventually(() => slow.text(id) === text)
    stopReading(slow)

    // 100 joins at once: 60 MB of replies, were each built and queued.
    for (let i = 0; i < 100; i++) slow.socket.emit(EVENTS.JOIN, { doc: id }, () => {})
    await eventually(() => tandem.server.registry.editorCount(id) === 1, { timeoutMs: 5000, what: 'the editor that stopped reading dropped' })
    const dropped = logLines.map(line => JSON.parse(line)).find(line => line.action === 'socket.slow-consumer')
    assert.ok(dropped, 'an audit line for the drop')
    t.diagnostic(`dropped with ${dropped.bufferedBytes} bytes held for it`)
    assert.ok(dropped.bufferedBytes < MiB + 2 * text.length, `${dropped.bufferedBytes} bytes held when dropped`)
    assert.deepEqual(await alice.insert(id, 0, '>'), { ok: true }, 'the others edit on')
    for (const e of [alice, slow]) e.close()
    await tandem.close()
  })

  it('is dropped the same when what waits for it is document updates, which go to the WebSocket directly while it reads', async (t) => {
    const MiB = 1024 * 1024
    const tandem = await startServer({ maxBufferedBytes: MiB, maxUpdateBytes: 512 * 1024, bytesPerSecond: 0, updatesPerSecond: 0 })
    const { id } = await createSession(tandem.url)
    const [alice, bob, slow] = [new TestEditor(tandem.url), new TestEditor(tandem.url), new TestEditor(tandem.url)]
    for (const e of [alice, bob, slow]) await e.join(id)
    stopReading(slow)

    const paused = performance.now()
    const text = 'x'.repeat(256 * 1024)
    const sent = 100 // 25 MiB to each reader
    for (let i = 1; i <= sent; i++) {
      await alice.insert(id, 0, text)
      if (i % 10 === 0) await eventually(() => bob.text(id).length === i * text.length, { timeoutMs: 10000, what: `bob has ${i} of them` })
    }
    await eventually(() => tandem.server.registry.editorCount(id) === 2, { timeoutMs: 5000, what: 'the editor that stopped reading dropped' })
    t.diagnostic(`dropped ${Math.round(performance.now() - paused)} ms after it stopped reading`)
    assert.equal(bob.text(id).length, sent * text.length, 'bob got every update')
    const metrics = await (await fetch(`${tandem.url}/metrics`)).text()
    assert.match(metrics, /tandem_slow_consumers_dropped_total\{[^}]*\} 1/)
    for (const e of [alice, bob, slow]) e.close()
    await tandem.close()
  })
})
