import assert from 'node:assert/strict'
import { gzipSync } from 'node:zlib'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { after, before, describe, it } from 'node:test'
import * as encoding from 'lib0/encoding'
import * as Y from 'yjs'
import { Encoder } from '../isomorphic/parser.js'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { TestEditor, awarenessUpdate } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { closedWithin, pollingOpen, pollingSend, pollingSession, rawWebSocket } from './helpers/raw-engine.js'
import { api, contentOf, createSession, startServer } from './helpers/server.js'

// Small inputs must not cost large resources: each test sends a few bytes that once cost the
// server seconds of event loop, hundreds of megabytes, or a reload of the document for everyone.

const MiB = 1024 * 1024
const MAX_DOC_STRUCTS = 2000
const MAX_DOC_CLIENTS = 40
const MAX_TYPE_DEPTH = 2
const MAX_INVALID_UPDATES = 3

setFlagsFromString('--expose-gc')
/** @type {() => void} */
const collectGarbage = runInNewContext('gc')

/** Heap in use after a full collection. */
function heapUsed () {
  collectGarbage()
  return process.memoryUsage().heapUsed
}

/** Structs a document holds. @param {Y.Doc} ydoc */
function structCount (ydoc) {
  let count = 0
  for (const structs of ydoc.store.clients.values()) count += structs.length
  return count
}

/** @param {string} hex */
const bytes = hex => new Uint8Array(Buffer.from(hex.replace(/\s/g, ''), 'hex'))

/** An update from a fresh client, made by `change` on a document of its own. @param {(ydoc: Y.Doc) => void} change */
function updateOf (change) {
  const ydoc = new Y.Doc()
  change(ydoc)
  const update = Y.encodeStateAsUpdate(ydoc)
  ydoc.destroy()
  return update
}

/**
 * An update carrying no structs and a delete set of one range for each of `clients` client ids.
 * @param {number} firstClient @param {number} clients
 */
function deletionsOfStrangers (firstClient, clients) {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, 0)
  encoding.writeVarUint(encoder, clients)
  for (let client = firstClient; client < firstClient + clients; client++) {
    encoding.writeVarUint(encoder, client)
    encoding.writeVarUint(encoder, 1)
    encoding.writeVarUint(encoder, 0)
    encoding.writeVarUint(encoder, 1)
  }
  return encoding.toUint8Array(encoder)
}

describe('small inputs must not cost large resources', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {TestEditor[]} */
  const editors = []

  before(async () => {
    tandem = await startServer({
      maxDocStructs: MAX_DOC_STRUCTS,
      maxDocClients: MAX_DOC_CLIENTS,
      maxTypeDepth: MAX_TYPE_DEPTH,
      maxInvalidUpdates: MAX_INVALID_UPDATES,
      connectionsPerMinute: 0,
      updatesPerSecond: 0
    })
  })
  after(async () => {
    for (const editor of editors) editor.close()
    await tandem.close()
  })

  /** A new session with alice and bob joined and `text` in it. @param {string} [text] */
  async function room (text = 'hello') {
    const { id: doc } = await createSession(tandem.url, { content: text })
    const [alice, bob] = [new TestEditor(tandem.url), new TestEditor(tandem.url)]
    editors.push(alice, bob)
    assert.equal((await alice.join(doc)).ok, true)
    assert.equal((await bob.join(doc)).ok, true)
    return { doc, alice, bob }
  }

  /** Alice's edit still reaches bob and storage. @param {{ doc: string, alice: TestEditor, bob: TestEditor }} room */
  async function assertRoomWorks ({ doc, alice, bob }) {
    const before = alice.text(doc)
    assert.deepEqual(await alice.insert(doc, 0, '>'), { ok: true })
    await eventually(() => bob.text(doc) === `>${before}`)
    assert.equal(await contentOf(tandem.url, doc), `>${before}`)
  }

  /** How long /api/health takes to answer, in ms. */
  async function healthLatency () {
    const started = performance.now()
    const res = await api(tandem.url, '/api/health')
    assert.equal(res.status, 200)
    return performance.now() - started
  }

  // A declared length the frame cannot hold: ext32 (type 0, which notepack fills byte by byte),
  // str32, bin32, array32 and map32 declaring 256 MiB, then ext32 declaring 4 GiB.
  const LYING_FRAMES = ['c9 10000000 00', 'db 10000000', 'c6 10000000', 'dd 10000000', 'df 10000000', 'c9 ffffffff 00']

  it('closes a WebSocket whose first frame declares gigabytes it does not carry, without allocating them', async () => {
    const editing = await room()
    for (const hex of LYING_FRAMES) {
      const rss = process.memoryUsage().rss
      const ws = await rawWebSocket(tandem.url)
      const closed = closedWithin(ws)
      ws.send(bytes(hex))
      const latency = await healthLatency()
      assert.ok(await closed < 2000, `${hex}: the connection is closed at once`)
      const grown = process.memoryUsage().rss - rss
      assert.ok(grown < 64 * MiB, `${hex}: RSS grew ${Math.round(grown / MiB)} MiB`)
      assert.ok(latency < 2000, `${hex}: /api/health took ${Math.round(latency)} ms`)
    }
    await assertRoomWorks(editing)
  })

  it('closes a long-polling session whose first message declares gigabytes it does not carry', async () => {
    const editing = await room()
    for (const hex of LYING_FRAMES) {
      const rss = process.memoryUsage().rss
      const sid = await pollingSession(tandem.url)
      assert.equal(await pollingSend(tandem.url, sid, bytes(hex)), 200)
      const latency = await healthLatency()
      const grown = process.memoryUsage().rss - rss
      assert.ok(grown < 64 * MiB, `${hex}: RSS grew ${Math.round(grown / MiB)} MiB`)
      assert.ok(latency < 2000, `${hex}: /api/health took ${Math.round(latency)} ms`)
      assert.equal(await pollingOpen(tandem.url, sid), false, `${hex}: the session is closed`)
    }
    await assertRoomWorks(editing)
  })

  it('holds a document to MAX_DOC_STRUCTS and bounds its heap, whatever the shape of its items', async (t) => {
    // The shapes that cost the most heap per byte sent: types embedded in the text (~650 bytes of
    // heap each for ~6 on the wire), then one-character items of alternating clients.
    const shapes = {
      'embedded maps': (/** @type {Y.Text} */ text) => { for (let i = 0; i < 250; i++) text.insertEmbed(i, new Y.Map()) },
      'embedded texts': (/** @type {Y.Text} */ text) => { for (let i = 0; i < 250; i++) text.insertEmbed(i, new Y.Text()) },
      'single characters': (/** @type {Y.Text} */ text) => { for (let i = 0; i < 250; i++) text.insert(i * 2, 'x') }
    }
    for (const [shape, insert] of Object.entries(shapes)) {
      const { doc, alice, bob } = await room('')
      const heap = heapUsed()
      let sentBytes = 0
      let refusal
      for (let round = 0; round < MAX_DOC_STRUCTS / 250 + 2 && !refusal; round++) {
        const ydoc = alice.ydoc(doc)
        const sv = Y.encodeStateVector(ydoc)
        ydoc.transact(() => insert(ydoc.getText(TEXT_NAME)))
        const update = Y.encodeStateAsUpdate(ydoc, sv)
        const reply = await alice.request(EVENTS.UPDATE, { doc, update })
        if (reply.ok) sentBytes += update.byteLength
        else refusal = reply.error
      }
      assert.equal(refusal?.code, 'TOO_LARGE', `${shape}: refused past the limit`)
      const live = /** @type {import('../server/documents/live-doc.js').LiveDoc} */ (tandem.server.registry.get(doc))
      const structs = structCount(live.ydoc)
      assert.ok(structs <= MAX_DOC_STRUCTS, `${shape}: ${structs} structs`)
      const grown = heapUsed() - heap
      // The bound the limit gives: the document's heap (both editors' copies and the server's live
      // one share this process) stays within 1.5 KiB per struct allowed, per copy (~800 bytes
      // measured for embedded types, ~250 for single characters).
      const perStruct = grown / 3 / MAX_DOC_STRUCTS
      t.diagnostic(`${shape}: ${structs} structs from ${sentBytes} bytes sent, ${Math.round(perStruct)} bytes of heap per struct per copy`)
      assert.ok(perStruct < 1536, `${shape}: ${Math.round(perStruct)} bytes of heap per struct (${Math.round(grown / sentBytes)} per byte sent)`)
      assert.equal(await contentOf(tandem.url, doc), bob.text(doc), 'what was accepted reached the others')
    }
  })

  it('refuses with TOO_LARGE deletions alone that would cut a long run of text into more than MAX_DOC_STRUCTS items', async () => {
    const { doc, alice, bob } = await room('')
    const run = 'x'.repeat(3 * MAX_DOC_STRUCTS)
    assert.deepEqual(await alice.insert(doc, 0, run), { ok: true })
    await eventually(() => bob.text(doc) === run)
    const live = /** @type {import('../server/documents/live-doc.js').LiveDoc} */ (tandem.server.registry.get(doc))
    const before = structCount(live.ydoc)
    /** Deletions of every other character over the first `length` of the run, on a copy of alice's document. @param {number} length */
    const everyOther = length => {
      const copy = new Y.Doc()
      Y.applyUpdate(copy, Y.encodeStateAsUpdate(alice.ydoc(doc)))
      const sv = Y.encodeStateVector(copy)
      copy.transact(() => { for (let i = length / 2 - 1; i >= 0; i--) copy.getText(TEXT_NAME).delete(2 * i, 1) })
      const update = Y.encodeStateAsUpdate(copy, sv)
      copy.destroy()
      return update
    }
    // Each range may cut two items: 2,000 ranges would make the one item 4,000.
    const refused = await alice.request(EVENTS.UPDATE, { doc, update: everyOther(2 * MAX_DOC_STRUCTS) })
    assert.equal(refused.error?.code, 'TOO_LARGE')
    assert.equal(structCount(live.ydoc), before, 'nothing of it applied')
    // A few hundred ranges stay within the limit and are taken.
    assert.deepEqual(await alice.request(EVENTS.UPDATE, { doc, update: everyOther(600) }), { ok: true })
    await eventually(() => bob.text(doc).length === run.length - 300)
    assert.ok(structCount(live.ydoc) <= MAX_DOC_STRUCTS, `${structCount(live.ydoc)} structs`)
    assert.equal(await contentOf(tandem.url, doc), bob.text(doc))
  })

  it('refuses with TOO_LARGE edits from more clients than MAX_DOC_CLIENTS, whose every transaction would cost more; the clients in it go on', async () => {
    const { doc, alice, bob } = await room()
    assert.deepEqual(await alice.insert(doc, 0, 'a'), { ok: true })
    const live = /** @type {import('../server/documents/live-doc.js').LiveDoc} */ (tandem.server.registry.get(doc))
    const clients = () => live.ydoc.store.clients.size
    const held = clients()
    /** One update of one character from each of `count` clients new to the document. @param {number} first @param {number} count */
    const strangers = (first, count) => Y.mergeUpdates(Array.from({ length: count }, (_, i) => updateOf(ydoc => {
      ydoc.clientID = first + i
      ydoc.getText(TEXT_NAME).insert(0, 'x')
    })))
    // A few bytes per client: one update could otherwise bring thousands.
    const refused = await alice.request(EVENTS.UPDATE, { doc, update: strangers(1000, MAX_DOC_CLIENTS - held + 1) })
    assert.equal(refused.error?.code, 'TOO_LARGE')
    assert.equal(clients(), held, 'nothing of it applied')
    assert.deepEqual(await alice.request(EVENTS.UPDATE, { doc, update: strangers(2000, MAX_DOC_CLIENTS - held) }), { ok: true })
    assert.equal(clients(), MAX_DOC_CLIENTS)
    // Bob has not written yet: his first edit, read as typing, would be a client more.
    const before = live.ydoc.getText(TEXT_NAME).toString()
    assert.equal((await bob.insert(doc, 0, 'b')).error?.code, 'TOO_LARGE')
    assert.equal(live.ydoc.getText(TEXT_NAME).toString(), before)
    // Alice already wrote to it, and goes on.
    assert.deepEqual(await alice.insert(doc, 0, '>'), { ok: true })
    assert.equal(clients(), MAX_DOC_CLIENTS)
    assert.equal(await contentOf(tandem.url, doc), live.ydoc.getText(TEXT_NAME).toString())
  })

  it('refuses types nested deeper than MAX_TYPE_DEPTH with TOO_LARGE', async () => {
    const { doc, alice, bob } = await room()
    /** @param {number} depth */
    const nested = depth => updateOf(ydoc => {
      let map = new Y.Map()
      ydoc.getText(TEXT_NAME).insertEmbed(0, map)
      for (let level = 1; level < depth; level++) {
        const inner = new Y.Map()
        map.set('inner', inner)
        map = inner
      }
    })
    assert.deepEqual(await alice.request(EVENTS.UPDATE, { doc, update: nested(MAX_TYPE_DEPTH) }), { ok: true })
    const reply = await alice.request(EVENTS.UPDATE, { doc, update: nested(MAX_TYPE_DEPTH + 1) })
    assert.equal(reply.error?.code, 'TOO_LARGE')
    await assertRoomWorks({ doc, alice: bob, bob })
  })

  it('refuses an update that creates a root type other than the text with INVALID_UPDATE', async () => {
    const editing = await room()
    const { doc } = editing
    const mallory = new TestEditor(tandem.url)
    editors.push(mallory)
    await mallory.join(doc)
    const floods = [
      updateOf(ydoc => { for (let i = 0; i < 1000; i++) ydoc.getMap(`root${i}`).set('k', i) }),
      updateOf(ydoc => ydoc.getText('other').insert(0, 'x')),
      updateOf(ydoc => ydoc.getArray(TEXT_NAME.toUpperCase()).insert(0, [1]))
    ]
    for (const update of floods) {
      const reply = await mallory.request(EVENTS.UPDATE, { doc, update })
      assert.equal(reply.error?.code, 'INVALID_UPDATE')
    }
    const live = /** @type {import('../server/documents/live-doc.js').LiveDoc} */ (tandem.server.registry.get(doc))
    assert.deepEqual([...live.ydoc.share.keys()], [TEXT_NAME])
    await assertRoomWorks(editing)
  })

  it('refuses deletions of clocks nobody has with OUT_OF_SYNC, so none stay pending', async () => {
    const editing = await room()
    const { doc, alice } = editing
    for (let i = 0; i < 3; i++) {
      const reply = await alice.request(EVENTS.UPDATE, { doc, update: deletionsOfStrangers(1_000_000 + i * 5000, 5000) })
      assert.equal(reply.error?.code, 'OUT_OF_SYNC')
    }
    const live = /** @type {import('../server/documents/live-doc.js').LiveDoc} */ (tandem.server.registry.get(doc))
    assert.equal(live.ydoc.store.pendingDs, null, 'no pending delete set')
    await assertRoomWorks(editing)
  })

  it('refuses an item that is its own origin without reloading the document for the others', async () => {
    const editing = await room()
    const { doc, bob } = editing
    const mallory = new TestEditor(tandem.url)
    editors.push(mallory)
    await mallory.join(doc)
    const reply = await mallory.request(EVENTS.UPDATE, { doc, update: bytes('01010900840900016100') })
    assert.equal(reply.error?.code, 'INVALID_UPDATE')
    // A struct whose origin is a later struct of its own client cannot be integrated in order either.
    const forward = await mallory.request(EVENTS.UPDATE, { doc, update: bytes('01020900 8409010161 0401 07 636f6e74656e74 0162 00') })
    assert.equal(forward.error?.code, 'INVALID_UPDATE')
    // The room's next edit is the marker: a reload notice would have reached Bob before it.
    await assertRoomWorks(editing)
    assert.equal(bob.received.filter(r => r.event === EVENTS.CLOSED).length, 0, 'nobody had to rejoin')
  })

  it('closes a connection after MAX_INVALID_UPDATES invalid updates', async () => {
    const editing = await room()
    const mallory = new TestEditor(tandem.url)
    editors.push(mallory)
    await mallory.join(editing.doc)
    const gone = new Promise(resolve => mallory.socket.once('disconnect', resolve))
    for (let i = 0; i < MAX_INVALID_UPDATES; i++) {
      const reply = await mallory.request(EVENTS.UPDATE, { doc: editing.doc, update: bytes('01010900840900016100') })
      assert.equal(reply.error?.code, 'INVALID_UPDATE')
    }
    assert.equal(await gone, 'io server disconnect')
    await assertRoomWorks(editing)
  })

  it('closes a connection that emits an event name Socket.IO reserves, before any handler runs', async () => {
    const editing = await room()
    for (const name of ['disconnect', 'disconnecting', 'error', 'newListener', 'removeListener', 'connect', 'connect_error']) {
      const mallory = new TestEditor(tandem.url)
      editors.push(mallory)
      assert.equal((await mallory.join(editing.doc)).ok, true)
      const gone = new Promise(resolve => mallory.socket.once('disconnect', resolve))
      // socket.io-client refuses to emit these itself: the packet is built by hand.
      mallory.socket.io.engine.send(new Encoder().encode({ type: 2, nsp: '/', data: [name, { doc: editing.doc }] })[0])
      const stillConnected = new Promise(resolve => setTimeout(resolve, 5000, 'still connected'))
      assert.equal(await Promise.race([gone, stillConnected]), 'transport close', name)
    }
    await assertRoomWorks(editing)
  })

  it('answers a corrupt gzip request body with 400 BAD_REQUEST', async () => {
    const valid = gzipSync(JSON.stringify({ name: 'zipped' }))
    for (const body of [Buffer.from('not gzip at all'), valid.subarray(0, valid.length - 6)]) {
      const res = await fetch(`${tandem.url}/api/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body
      })
      assert.equal(res.status, 400)
      const reply = await res.json()
      assert.equal(reply.error.code, 'BAD_REQUEST')
      assert.equal(typeof reply.error.message, 'string')
    }
  })

  it('reads a request body only on the routes that take one, after the API key', async (t) => {
    const keyed = await startServer({ apiKey: 'k'.repeat(32) })
    t.after(() => keyed.close())
    // What a stranger could send anywhere: 2 KB on the wire, 2 MiB of nested arrays once inflated
    // (a third of a second to parse), and a body that is not JSON at all, which shows whether it was read.
    const bodies = [gzipSync('['.repeat(1024 * 1024) + ']'.repeat(1024 * 1024)), gzipSync('{ not json')]
    for (const body of bodies) {
      const post = (/** @type {string} */ path) => fetch(`${keyed.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body
      })
      // Refused for what they are, the body unread: no route, no key.
      assert.equal((await post('/api/health')).status, 404)
      assert.equal((await post('/nowhere')).status, 404)
      const unkeyed = await post('/api/sessions')
      assert.equal(unkeyed.status, 401)
      assert.equal((await unkeyed.json()).error.code, 'UNAUTHORIZED')
    }
  })

  it('answers a path whose percent-escapes do not decode with 400 BAD_REQUEST', async () => {
    for (const path of ['/s/%ZZ', '/assets/%ZZ', '/api/sessions/%E0%A4%A', '/api/sessions/%ZZ/content', '/api/sessions/abc/tokens/%ZZ']) {
      const res = await fetch(`${tandem.url}${path}`)
      assert.equal(res.status, 400, path)
      assert.equal((await res.json()).error.code, 'BAD_REQUEST', path)
    }
  })

  it('refuses payload fields that are maps with a __proto__ key with BAD_REQUEST', async () => {
    const editing = await room()
    const { doc, alice } = editing
    const update = updateOf(ydoc => ydoc.getText(TEXT_NAME).insert(0, 'sneaky'))
    // A computed key makes `__proto__` an own property, so the encoder writes it as a map key.
    const disguised = (/** @type {unknown} */ value) => ({ ['__proto__']: value })
    const payloads = [
      [EVENTS.UPDATE, { doc, update: disguised(update) }],
      [EVENTS.AWARENESS, { doc, update: disguised(awarenessUpdate(alice.ydoc(doc).clientID, 1, {})) }],
      [EVENTS.JOIN, { doc, sv: disguised(new Uint8Array([0])) }],
      [EVENTS.UPDATE, disguised({ doc, update })]
    ]
    for (const [event, payload] of payloads) {
      const reply = await alice.request(/** @type {string} */ (event), payload)
      assert.equal(reply.error?.code, 'BAD_REQUEST', `${event}: ${reply.error?.message}`)
    }
    const metrics = await api(tandem.url, '/metrics')
    assert.doesNotMatch(String(metrics.body), /code="INTERNAL"/)
    await assertRoomWorks(editing)
  })
})
