import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pino from 'pino'
import * as Y from 'yjs'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { loadConfig } from '../server/config.js'
import { openBackend } from '../server/storage/backend.js'
import { StorageHealth } from '../server/storage/storage-health.js'
import { readShape } from '../server/documents/update-shape.js'
import { TestEditor } from './helpers/editor.js'
import { api, contentOf, createSession, startServer, tempDataDir } from './helpers/server.js'

// Updates that carry little on the wire but would cost the server far more to hold than they say,
// or that Yjs would hold pending for good. Each is refused before it touches the document, and a
// document stored before such a check is refused on load rather than loaded past its limits.

/** One item in the text of `count` values of `Any` content: an empty array each, two bytes. @param {number} count */
function anyValues (count) {
  const ydoc = new Y.Doc()
  ydoc.getArray(TEXT_NAME).push(Array.from({ length: count }, () => []))
  return Y.encodeStateAsUpdate(ydoc)
}

/** @param {string} hex */
const bytes = hex => new Uint8Array(Buffer.from(hex, 'hex'))

// "a" by client 777 in one section, then "b" after it in a second section of the same client.
const TWO_SECTIONS = bytes('0201890600040107636f6e74656e7401610189060184890600016200')

describe('update shape', () => {
  it('reads every section\'s client and counts nested values without decoding', () => {
    assert.deepEqual(readShape(TWO_SECTIONS).sectionClients, [777, 777])
    assert.equal(readShape(anyValues(1000)).values, 1000)
    const nested = new Y.Doc()
    nested.getArray(TEXT_NAME).push([[[], []]])
    assert.equal(readShape(Y.encodeStateAsUpdate(nested)).values, 3, 'an array of two arrays')
    const ydoc = new Y.Doc()
    ydoc.getText(TEXT_NAME).insert(0, 'plain text')
    assert.deepEqual(readShape(Y.encodeStateAsUpdate(ydoc)), { sectionClients: [ydoc.clientID], values: 0, subdocuments: 0 })
  })
})

describe('updates that cost more than they carry', () => {
  it('refuses values of other content past the document\'s struct limit, and keeps the document as it was', async () => {
    const tandem = await startServer({ maxDocStructs: 1000 })
    const { id } = await createSession(tandem.url, { content: 'kept' })
    const editor = new TestEditor(tandem.url)
    await editor.join(id)
    const reply = await editor.request(EVENTS.UPDATE, { doc: id, update: anyValues(2000) })
    assert.equal(reply.ok, false)
    assert.equal(reply.error.code, 'TOO_LARGE')
    assert.deepEqual(await editor.insert(id, 4, '!'), { ok: true })
    assert.equal(await contentOf(tandem.url, id), 'kept!')
    editor.close()
    await tandem.close()
  })

  it('refuses subdocuments', async () => {
    const tandem = await startServer()
    const { id } = await createSession(tandem.url)
    const editor = new TestEditor(tandem.url)
    await editor.join(id)
    const ydoc = new Y.Doc()
    ydoc.getArray(TEXT_NAME).push([new Y.Doc()])
    const reply = await editor.request(EVENTS.UPDATE, { doc: id, update: Y.encodeStateAsUpdate(ydoc) })
    assert.equal(reply.ok, false)
    assert.equal(reply.error.code, 'INVALID_UPDATE')
    editor.close()
    await tandem.close()
  })

  it('refuses an update that names one client in two sections, and a later joiner is in sync', async () => {
    const tandem = await startServer()
    const { id } = await createSession(tandem.url, { content: 'x' })
    const attacker = new TestEditor(tandem.url)
    await attacker.join(id)
    const reply = await attacker.request(EVENTS.UPDATE, { doc: id, update: TWO_SECTIONS })
    assert.equal(reply.ok, false)
    assert.equal(reply.error.code, 'INVALID_UPDATE')
    const honest = new TestEditor(tandem.url)
    const joined = await honest.join(id)
    assert.equal(joined.ok, true)
    const store = honest.ydoc(id).store
    assert.equal(store.pendingStructs, null, 'the join reply leaves nothing pending')
    assert.deepEqual(await honest.insert(id, 1, 'y'), { ok: true })
    assert.equal(await contentOf(tandem.url, id), 'xy')
    for (const e of [attacker, honest]) e.close()
    await tandem.close()
  })
})

describe('documents stored past their limits', () => {
  it('a document holding more values than the limit is refused TOO_LARGE on join; the server goes on', async () => {
    const data = await tempDataDir()
    const before = await startServer({ dataDir: data.dir, maxDocStructs: 100_000 })
    const { id } = await createSession(before.url)
    const { id: other } = await createSession(before.url, { content: 'fine' })
    const editor = new TestEditor(before.url)
    await editor.join(id)
    assert.deepEqual(await editor.request(EVENTS.UPDATE, { doc: id, update: anyValues(2000) }), { ok: true })
    editor.close()
    await before.close()

    const after = await startServer({ dataDir: data.dir, maxDocStructs: 1000 })
    const late = new TestEditor(after.url)
    const reply = await late.join(id)
    assert.equal(reply.ok, false)
    assert.equal(reply.error.code, 'TOO_LARGE')
    assert.equal((await late.join(other)).ok, true)
    assert.equal(late.text(other), 'fine')
    assert.equal((await api(after.url, '/api/health')).status, 200)
    late.close()
    await after.close()
    await data.remove()
  })

  it('a document whose stored updates leave structs pending is refused on join, not served as partial text', async () => {
    const data = await tempDataDir()
    const first = await startServer({ dataDir: data.dir })
    const { id } = await createSession(first.url, { content: 'whole' })
    await first.close()

    // Written past the server: "b" of a client whose "a" storage never got.
    const config = loadConfig({}, { dataDir: data.dir, logLevel: 'silent' })
    const logger = pino({ level: 'silent' })
    const backend = await openBackend(config, logger, new StorageHealth(logger, { inc () {} }))
    await backend.docStore.append(id, [bytes('0101890601848906000162' + '00')])
    await backend.close()

    const second = await startServer({ dataDir: data.dir })
    const editor = new TestEditor(second.url)
    const reply = await editor.join(id)
    assert.equal(reply.ok, false)
    assert.equal(reply.error.code, 'UNAVAILABLE')
    assert.equal((await api(second.url, `/api/sessions/${id}/content`)).status, 503)
    editor.close()
    await second.close()
    await data.remove()
  })
})
