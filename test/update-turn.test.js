import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as Y from 'yjs'
import { acceptUpdate } from '../server/documents/accept-update.js'
import { TEXT_NAME } from '../isomorphic/events.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { updateOf } from './helpers/update-of.js'
import { contentOf, createSession, startServer } from './helpers/server.js'

// In a document many clients wrote to, the updates taken in one turn of the event loop are applied
// together, in one Yjs transaction, at the end of the turn (LiveDoc.take). Each test calls the accept
// path itself, several times in one turn, so what shares a turn does not depend on how the sockets'
// reads fall.

const MAX_DOC_STRUCTS = 400
/** Clients a document is given before the tests of a turn's transaction: past LiveDoc's threshold. */
const CROWD = 64

describe('updates taken in one turn', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {TestEditor[]} */
  const editors = []
  before(async () => { tandem = await startServer({ maxDocStructs: MAX_DOC_STRUCTS }) })
  after(async () => {
    for (const editor of editors) editor.close()
    await tandem.close()
  })

  const from = { sender: /** @type {import('socket.io').Socket} */ (/** @type {unknown} */ ({})) }
  /** @param {import('../server/documents/live-doc.js').LiveDoc} doc @param {Uint8Array} update */
  const accept = (doc, update) => acceptUpdate(doc, update, from, { config: tandem.config }, tandem.server.logger)

  /**
   * A session with `text` in it, loaded, and a client that starts from what it holds. Unless `few`,
   * `CROWD` clients have written to it first (each a character, deleted at once).
   * @param {string} text
   * @param {{ few?: boolean }} [options]
   */
  async function loaded (text, { few = false } = {}) {
    const { id } = await createSession(tandem.url, { content: text })
    const doc = await tandem.server.registry.open(id)
    if (!few) await accept(doc, crowded(doc.ydoc))
    return { id, doc, client: () => copyOf(doc.ydoc) }
  }

  /** The text a document's stored log rebuilds. @param {string} id */
  async function storedText (id) {
    const stored = await tandem.server.registry.store.load(id)
    const ydoc = new Y.Doc()
    for (const update of stored.updates) Y.applyUpdate(ydoc, update)
    return ydoc.getText(TEXT_NAME).toString()
  }

  it('applies an update at once in a document few clients wrote to', async () => {
    const { id, doc, client } = await loaded('few', { few: true })
    const stored = accept(doc, updateOf(client(), text => text.insert(3, '!')))
    assert.equal(doc.appliedYdoc.getText(TEXT_NAME).toString(), 'few!', 'applied before the turn ends')
    await stored
    assert.equal(await storedText(id), 'few!')
  })

  it('applies them in one transaction, sends them to the editors and stores them', async () => {
    const { id, doc, client } = await loaded('0123456789')
    const watcher = new TestEditor(tandem.url)
    editors.push(watcher)
    assert.equal((await watcher.join(id)).ok, true)
    const base = client()
    const writers = [client(), client(), client()]
    const updates = writers.map((ydoc, i) => updateOf(ydoc, text => text.insert(3 * i, `<${i}>`)))
    let transactions = 0
    doc.ydoc.on('afterTransaction', () => transactions++)
    const replies = await Promise.allSettled(updates.map(update => accept(doc, update)))
    assert.deepEqual(replies.map(reply => reply.status), ['fulfilled', 'fulfilled', 'fulfilled'])
    assert.equal(transactions, 1, 'one transaction for the three')
    const expected = merged(base, writers)
    assert.equal(expected, '<0>012<1>345<2>6789')
    assert.equal(doc.ydoc.getText(TEXT_NAME).toString(), expected)
    await eventually(() => watcher.text(id) === expected)
    assert.equal(await storedText(id), expected)
  })

  it('stores the updates of a turn in the turn that applies them', async () => {
    const { id, doc, client } = await loaded('turn')
    let stored = false
    const storing = accept(doc, updateOf(client(), text => text.insert(4, '!'))).then(() => { stored = true })
    // Queued after the turn's apply: it runs in the same turn, after the apply's write if that
    // writes in the same turn, and before it if the write waits for the next.
    await new Promise(resolve => setImmediate(resolve))
    assert.equal(stored, true, 'stored before the next turn')
    await storing
    assert.equal(await storedText(id), 'turn!')
  })

  it('applies what an update builds on first when that was taken in the same turn', async () => {
    const { id, doc, client } = await loaded('line\n')
    const writer = client()
    const first = updateOf(writer, text => text.insert(5, 'abc'))
    const second = updateOf(writer, text => text.insert(8, 'def'))
    const replies = await Promise.allSettled([accept(doc, first), accept(doc, second)])
    assert.deepEqual(replies.map(reply => reply.status), ['fulfilled', 'fulfilled'])
    assert.equal(doc.ydoc.getText(TEXT_NAME).toString(), 'line\nabcdef')
    assert.equal(await storedText(id), 'line\nabcdef')
  })

  it('holds a document to MAX_DOC_STRUCTS counting the updates taken but not applied yet', async () => {
    const { id, doc, client } = await loaded('x'.repeat(240))
    // Each adds 80 items of one character apart from each other, which may add 240 structs: within
    // the limit alone, past it together.
    const scatter = (/** @type {Y.Text} */ text) => { for (let i = 79; i >= 0; i--) text.insert(3 * i, 'y') }
    const [first, second] = [client(), client()].map(ydoc => updateOf(ydoc, scatter))
    const replies = await Promise.allSettled([accept(doc, first), accept(doc, second)])
    assert.equal(replies[0].status, 'fulfilled')
    assert.equal(replies[1].status === 'rejected' && replies[1].reason.code, 'TOO_LARGE')
    assert.equal(await contentOf(tandem.url, id), await storedText(id))
    assert.equal((await storedText(id)).length, 320, 'the first is stored, the second is not')
  })

  it('refuses the whole turn when an update fails halfway through applying, and reloads the document', async () => {
    const { id, doc, client } = await loaded('base')
    const update = updateOf(client(), text => text.insert(4, '+'))
    // Yjs applies this one's text and then fails on its missing delete set: it stands for an update
    // that passes the checks and still fails, which the checks exist to prevent.
    const whole = updateOf(client(), text => text.insert(0, '-'))
    const valid = accept(doc, update)
    const broken = doc.take(whole.subarray(0, whole.byteLength - 1), from, { structs: 1, clients: 0 })
    const [validReply, brokenReply] = await Promise.allSettled([valid, broken])
    assert.equal(brokenReply.status === 'rejected' && brokenReply.reason.code, 'INVALID_UPDATE')
    assert.equal(validReply.status === 'rejected' && validReply.reason.code, 'UNAVAILABLE', 'the other is to be sent again')
    await eventually(() => tandem.server.registry.get(id) !== doc)
    assert.equal(await storedText(id), 'base', 'nothing of the turn is stored')
    assert.equal(await contentOf(tandem.url, id), 'base')
  })

  it('stores an update taken just before its document is dropped, before the document loads again', async () => {
    const { id, doc, client } = await loaded('kept')
    const update = updateOf(client(), text => text.insert(4, '!'))
    const stored = accept(doc, update)
    // Dropped without a compaction, which would hold it in its snapshot anyway.
    await tandem.server.registry.evict(id)
    const reloaded = await tandem.server.registry.open(id)
    assert.notEqual(reloaded, doc)
    assert.equal(reloaded.ydoc.getText(TEXT_NAME).toString(), 'kept!')
    await stored
    tandem.server.registry.release(reloaded)
  })
})

/** An update in which `CROWD` new clients each write a character and delete it. @param {Y.Doc} source */
function crowded (source) {
  const ydoc = copyOf(source)
  const before = Y.encodeStateVector(ydoc)
  for (let i = 0; i < CROWD; i++) {
    ydoc.clientID = 1_000_000 + i
    ydoc.transact(() => ydoc.getText(TEXT_NAME).insert(0, 'c'))
    ydoc.transact(() => ydoc.getText(TEXT_NAME).delete(0, 1))
  }
  return Y.encodeStateAsUpdate(ydoc, before)
}

/** @param {Y.Doc} source */
function copyOf (source) {
  const ydoc = new Y.Doc()
  Y.applyUpdate(ydoc, Y.encodeStateAsUpdate(source))
  return ydoc
}

/** The text of `base` with every writer's edits merged in, apart from the server. @param {Y.Doc} base @param {Y.Doc[]} writers */
function merged (base, writers) {
  for (const writer of writers) Y.applyUpdate(base, Y.encodeStateAsUpdate(writer))
  return base.getText(TEXT_NAME).toString()
}
