import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, it } from 'node:test'
import * as Y from 'yjs'
import * as encoding from 'lib0/encoding'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { maxFrameBytes } from '../server/realtime/io.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { BASE, BASE_TEXT, MISSING_DEPENDENCY, POISON } from './helpers/poison-update.js'
import { api, contentOf, createSession, startServer, tempDataDir } from './helpers/server.js'

const MAX_UPDATE_BYTES = 4096
const ORIGINAL = 'const answer = 42\n'

/** A real update that inserts `text` into a fresh document. @param {string} text */
function insertUpdate (text) {
  const ydoc = new Y.Doc()
  ydoc.getText(TEXT_NAME).insert(0, text)
  return Y.encodeStateAsUpdate(ydoc)
}

/** An awareness update in the y-protocols format with a raw (possibly invalid) JSON state. @param {string} state */
function awarenessWith (state) {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, 1)
  encoding.writeVarUint(encoder, 1234)
  encoding.writeVarUint(encoder, 1)
  encoding.writeVarString(encoder, state)
  return encoding.toUint8Array(encoder)
}

describe('bad input gets a clear error and changes nothing', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let data
  /** @type {TestEditor} */
  let mallory
  /** @type {TestEditor} */
  let bob
  /** @type {string} */
  let doc

  before(async () => {
    data = await tempDataDir()
    tandem = await startServer({ dataDir: data.dir, maxUpdateBytes: MAX_UPDATE_BYTES, maxDocsPerSocket: 3 })
  })
  after(async () => {
    await tandem.close()
    await data.remove()
  })
  beforeEach(async () => {
    mallory?.close()
    bob?.close()
    doc = (await createSession(tandem.url, { content: ORIGINAL })).id
    mallory = new TestEditor(tandem.url)
    bob = new TestEditor(tandem.url)
    await mallory.join(doc)
    await bob.join(doc)
  })

  /** The document is as it was, Bob saw nothing, and the room still works for both. */
  async function assertUnharmed () {
    assert.equal(await contentOf(tandem.url, doc), ORIGINAL)
    // A marker from another editor, sent once Mallory's attempts were answered (or her connection
    // dropped): anything of hers relayed to Bob would have reached him before it, so once he has the
    // marker, the one thing he received is the marker.
    const carol = new TestEditor(tandem.url)
    await carol.join(doc)
    assert.deepEqual(await carol.insert(doc, 0, '// marker\n'), { ok: true })
    await eventually(() => bob.received.length > 0, { what: 'the marker' })
    assert.deepEqual(bob.received.map(({ event }) => event), [EVENTS.UPDATE], 'the other editor received the marker only')
    assert.equal(bob.text(doc), `// marker\n${ORIGINAL}`)
    carol.close()
    assert.deepEqual(await bob.insert(doc, 0, '// ok\n'), { ok: true })
    if (mallory.socket.connected) await eventually(() => mallory.text(doc) === `// ok\n// marker\n${ORIGINAL}`)
    assert.equal(await contentOf(tandem.url, doc), `// ok\n// marker\n${ORIGINAL}`)
  }

  /** @param {string} event @param {unknown} payload @param {string} code */
  async function assertRefused (event, payload, code) {
    const reply = await mallory.request(event, payload)
    assert.equal(reply.ok, false, `${event} ${JSON.stringify(payload)?.slice(0, 80)}`)
    assert.equal(reply.error.code, code, reply.error.message)
    assert.equal(typeof reply.error.message, 'string')
  }

  it('refuses updates that are not binary with BAD_REQUEST', async () => {
    const bytes = insertUpdate('evil')
    for (const update of [Buffer.from(bytes).toString('base64'), [...bytes], { 0: 1 }, 42, null, undefined]) {
      await assertRefused(EVENTS.UPDATE, { doc, update }, 'BAD_REQUEST')
    }
    await assertUnharmed()
  })

  it('refuses payloads of the wrong shape for every event with BAD_REQUEST', async () => {
    for (const event of [EVENTS.JOIN, EVENTS.UPDATE, EVENTS.LEAVE]) {
      for (const payload of ['doc', 7, null, [], { doc: 12 }, { doc: '' }, { doc: '../etc/passwd' }, { doc: 'x'.repeat(65) }]) {
        await assertRefused(event, payload, 'BAD_REQUEST')
      }
    }
    await assertRefused(EVENTS.JOIN, { doc, sv: 'not binary' }, 'BAD_REQUEST')
    const fresh = await createSession(tandem.url)
    await assertRefused(EVENTS.JOIN, { doc: fresh.id, sv: new Uint8Array([0xff, 0xff, 0xff]) }, 'BAD_REQUEST')
    assert.equal((await api(tandem.url, `/api/sessions/${fresh.id}`)).body.editors, 0, 'a refused join joins nothing')
    await assertUnharmed()
  })

  it('refuses bytes that are not a Yjs update with INVALID_UPDATE', async () => {
    const valid = insertUpdate('truncated insert')
    const garbage = [new Uint8Array([]), new Uint8Array([1, 2, 3]), new Uint8Array(64).fill(7), valid.slice(0, valid.length - 4)]
    for (const update of garbage) await assertRefused(EVENTS.UPDATE, { doc, update }, 'INVALID_UPDATE')
    await assertUnharmed()
  })

  it('refuses an update over MAX_UPDATE_BYTES with TOO_LARGE', async () => {
    const update = insertUpdate('x'.repeat(MAX_UPDATE_BYTES + 10))
    assert.ok(update.byteLength > MAX_UPDATE_BYTES)
    await assertRefused(EVENTS.UPDATE, { doc, update }, 'TOO_LARGE')
    await assertUnharmed()
  })

  it('drops a connection that sends a frame far over the limit, and the server stays up', async () => {
    const closed = new Promise(resolve => mallory.socket.once('disconnect', resolve))
    mallory.socket.emit(EVENTS.UPDATE, { doc, update: new Uint8Array(maxFrameBytes(MAX_UPDATE_BYTES) + 1) }, () => {})
    assert.equal(await closed, 'transport close')
    await assertUnharmed()
  })

  it('refuses events for documents the socket has not joined or that do not exist', async () => {
    const other = await createSession(tandem.url, { content: 'untouched' })
    await assertRefused(EVENTS.UPDATE, { doc: other.id, update: insertUpdate('sneaky') }, 'NOT_JOINED')
    await assertRefused(EVENTS.LEAVE, { doc: other.id }, 'NOT_JOINED')
    await assertRefused(EVENTS.JOIN, { doc: 'nosuchdocument' }, 'NOT_FOUND')
    await assertRefused(EVENTS.UPDATE, { doc: 'nosuchdocument', update: insertUpdate('x') }, 'NOT_JOINED')
    assert.equal(await contentOf(tandem.url, other.id), 'untouched')
    await assertUnharmed()
  })

  it('refuses a join past MAX_DOCS_PER_SOCKET with RATE_LIMITED', async () => {
    for (let i = 0; i < 2; i++) assert.equal((await mallory.join((await createSession(tandem.url)).id)).ok, true)
    const fourth = await createSession(tandem.url)
    await assertRefused(EVENTS.JOIN, { doc: fourth.id }, 'RATE_LIMITED')
    await assertUnharmed()
  })

  it('refuses malformed awareness and relays none of it', async () => {
    for (const update of [new Uint8Array([5, 1, 2]), awarenessWith('{not json'), awarenessWith('"a string"'), 'text']) {
      const reply = await mallory.request(EVENTS.AWARENESS, { doc, update })
      assert.equal(reply.ok, false)
      assert.ok(['INVALID_UPDATE', 'BAD_REQUEST'].includes(reply.error.code))
    }
    mallory.socket.emit(EVENTS.AWARENESS, { doc, update: new Uint8Array([9, 9]) })
    await assertUnharmed()
  })

  it('ignores events without an ACK callback and unknown events', async () => {
    mallory.socket.emit(EVENTS.UPDATE, { doc, update: insertUpdate('no ack') })
    mallory.socket.emit(EVENTS.JOIN, { doc })
    mallory.socket.emit('doc:explode', { doc })
    mallory.socket.emit(EVENTS.UPDATE)
    await assertUnharmed()
    assert.equal((await api(tandem.url, '/api/health')).body.ready, true)
  })
})

/**
 * A session holding BASE's history, with alice (who wrote it), bob and mallory joined.
 * @param {{ url: string }} tandem
 */
async function editorsOnBase (tandem) {
  const { id: doc } = await createSession(tandem.url)
  const [alice, bob, mallory] = [new TestEditor(tandem.url), new TestEditor(tandem.url), new TestEditor(tandem.url)]
  await alice.join(doc)
  for (const update of BASE) assert.deepEqual(await alice.request(EVENTS.UPDATE, { doc, update }), { ok: true })
  await bob.join(doc)
  await mallory.join(doc)
  return { doc, alice, bob, mallory }
}

describe('an update that builds on structs the server does not have', () => {
  it('is refused as OUT_OF_SYNC, applied nowhere, and the document goes on', async () => {
    const tandem = await startServer()
    const { doc, alice, bob, mallory } = await editorsOnBase(tandem)

    const reply = await mallory.request(EVENTS.UPDATE, { doc, update: MISSING_DEPENDENCY })
    assert.equal(reply.error.code, 'OUT_OF_SYNC')
    // Alice's edit, sent after the refusal, is the marker: anything of Mallory's relayed to Bob would
    // have reached him before it. (Alice sent BASE without applying it: joining again catches her up.)
    assert.equal((await alice.join(doc)).ok, true)
    assert.deepEqual(await alice.insert(doc, 0, '>'), { ok: true })
    await eventually(() => bob.text(doc) === `>${BASE_TEXT}` && mallory.received.some(r => r.event === EVENTS.UPDATE), { what: 'the marker' })
    assert.equal(bob.received.filter(r => r.event === EVENTS.UPDATE).length, 1, 'nothing of it was relayed, only the marker')
    assert.equal(bob.received.filter(r => r.event === EVENTS.CLOSED).length, 0, 'nobody had to rejoin')
    assert.equal(await contentOf(tandem.url, doc), `>${BASE_TEXT}`)
    for (const e of [alice, bob, mallory]) e.close()
    await tandem.close()
  })
})

describe('an update that once decoded but failed halfway through applying', () => {
  const TEXT = BASE_TEXT

  it('is refused before it is applied: nobody has to rejoin and the document is as stored', async () => {
    const data = await tempDataDir()
    const tandem = await startServer({ dataDir: data.dir })
    const { doc, alice, bob, mallory } = await editorsOnBase(tandem)
    assert.equal(bob.text(doc), TEXT)

    const reply = await mallory.request(EVENTS.UPDATE, { doc, update: POISON })
    assert.equal(reply.error.code, 'OUT_OF_SYNC', 'it deletes clocks of a client the document lacks')
    // Alice's edit, sent after the refusal, is the marker: a reload notice or anything of Mallory's
    // relayed to Bob would have reached him before it.
    await alice.join(doc)
    assert.deepEqual(await alice.insert(doc, 0, '>'), { ok: true })
    await eventually(() => bob.text(doc) === `>${TEXT}`, { what: 'the marker' })
    assert.equal(bob.received.filter(r => r.event === EVENTS.CLOSED).length, 0, 'nobody had to rejoin')
    assert.equal(bob.received.filter(r => r.event === EVENTS.UPDATE).length, 1, 'nothing of it was relayed, only the marker')
    assert.equal(await contentOf(tandem.url, doc), `>${TEXT}`)
    for (const e of [alice, bob, mallory]) e.close()
    await tandem.close()
    await data.remove()
  })
})
