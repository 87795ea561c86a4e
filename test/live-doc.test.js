import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import pino from 'pino'
import * as Y from 'yjs'
import { TEXT_NAME } from '../isomorphic/events.js'
import { acceptUpdate } from '../server/documents/accept-update.js'
import { CompactionQueue } from '../server/documents/compaction-queue.js'
import { DocRegistry } from '../server/documents/doc-registry.js'
import { DOC_STATES, LiveDoc } from '../server/documents/live-doc.js'
import { MemoryStore } from './helpers/memory-store.js'
import { BASE, BASE_TEXT, POISON } from './helpers/poison-update.js'

// The life of a loaded document against a store that can hold or fail each call: whatever fails
// and in whatever order, an update is acknowledged only once stored, nothing is written or compacted
// from a copy that holds what storage refused, and a close waits for no other document.

const logger = pino({ level: 'silent' })
const metrics = /** @type {any} */ ({ compactions: { inc () {} }, docLoadDuration: { observe () {} } })
const sender = /** @type {any} */ ({})
const ONE = { structs: 1, clients: 0 }

/**
 * @param {MemoryStore} store
 * @param {string} id
 * @param {{ compactAfterUpdates?: number, compactions?: CompactionQueue }} [options]
 */
async function loaded (store, id, { compactAfterUpdates = 1000, compactions = new CompactionQueue() } = {}) {
  /** @type {LiveDoc[]} */
  const untrusted = []
  const doc = new LiveDoc(id, {
    store,
    compactAfterUpdates,
    compactions,
    maxDocBytes: 1e9,
    maxDocStructs: 1e6,
    onUntrusted: distrusted => untrusted.push(distrusted),
    onRemoteUpdate () {},
    onApplied () {},
    logger,
    metrics
  })
  await doc.load()
  return { doc, untrusted }
}

/**
 * An editor's copy of `doc`: `type(index, text)` makes an edit and returns exactly its update.
 * @param {LiveDoc} doc
 */
function editorOf (doc) {
  const ydoc = new Y.Doc()
  Y.applyUpdate(ydoc, Y.encodeStateAsUpdate(doc.ydoc))
  /** @param {number} index @param {string} text */
  return (index, text) => {
    /** @type {Uint8Array[]} */
    const updates = []
    const collect = (/** @type {Uint8Array} */ update) => updates.push(update)
    ydoc.on('update', collect)
    ydoc.getText(TEXT_NAME).insert(index, text)
    ydoc.off('update', collect)
    return updates[0]
  }
}

/** @param {MemoryStore} store @param {string} id @param {string} text */
async function seeded (store, id, text) {
  const ydoc = new Y.Doc()
  ydoc.getText(TEXT_NAME).insert(0, text)
  await store.append(id, [Y.encodeStateAsUpdate(ydoc)])
  store.calls.append = 0
}

/** @param {Promise<unknown>} promise */
const codeOf = promise => promise.then(() => 'ok', (/** @type {any} */ err) => err.code ?? err.message)

describe('LiveDoc', () => {
  it('takes, writes and acknowledges only while live; a copy that failed to apply an update writes nothing more', async () => {
    const store = new MemoryStore()
    for (const update of BASE) await store.append('d', [update])
    const { doc, untrusted } = await loaded(store, 'd')
    assert.equal(doc.state, DOC_STATES.LIVE)
    const type = editorOf(doc)
    const before = store.calls.append
    // Yjs throws halfway through applying it (poison-update.js).
    assert.equal(await codeOf(doc.take(POISON, sender, ONE)), 'INVALID_UPDATE')
    assert.equal(doc.state, DOC_STATES.CLOSING)
    assert.deepEqual(untrusted, [doc])
    // Checked against the half-applied copy, it would pass; taken, it would be stored without what it builds on.
    assert.equal(await codeOf(doc.take(type(0, '!'), sender, ONE)), 'UNAVAILABLE')
    assert.equal(store.calls.append, before)
    assert.equal(store.textOf('d'), BASE_TEXT)
  })

  it('refuses, in a turn of many clients, the updates taken after one of the turn failed to apply', async () => {
    const store = new MemoryStore()
    for (const update of BASE) await store.append('d', [update])
    // Past the clients from which a turn's updates are applied together at its end.
    for (let i = 0; i < 70; i++) {
      const other = new Y.Doc()
      other.getText(TEXT_NAME).insert(0, 'c')
      await store.append('d', [Y.encodeStateAsUpdate(other)])
    }
    const { doc } = await loaded(store, 'd')
    const type = editorOf(doc)
    const before = store.calls.append
    const poisoned = codeOf(doc.take(POISON, sender, ONE))
    // What the update check does for an update that builds on the turn's: it reads the whole copy.
    assert.ok(doc.ydoc)
    const next = codeOf(doc.take(type(0, '!'), sender, ONE))
    assert.deepEqual([await poisoned, await next], ['INVALID_UPDATE', 'UNAVAILABLE'])
    assert.equal(store.calls.append, before)
  })

  it('never stores a snapshot holding an update whose write was refused', async () => {
    const store = new MemoryStore()
    await seeded(store, 'd', 'a')
    const { doc, untrusted } = await loaded(store, 'd', { compactAfterUpdates: 2 })
    const type = editorOf(doc)
    const releaseCompaction = store.hold('compact')
    store.next.append.push({})
    const releaseWrite = store.hold('append', new Error('EIO: fdatasync'))
    // The second stored update makes a compaction due; it waits in the store.
    assert.equal(await codeOf(doc.take(type(1, 'b'), sender, ONE)), 'ok')
    // Applied and being written when the compaction takes its snapshot.
    const refused = codeOf(doc.take(type(2, 'C'), sender, ONE))
    releaseCompaction()
    await new Promise(resolve => setImmediate(resolve))
    releaseWrite()
    assert.equal(await refused, 'EIO: fdatasync')
    assert.deepEqual(untrusted, [doc])
    await new Promise(resolve => setTimeout(resolve, 10))
    assert.equal(store.docs.get('d')?.snapshot, null, 'no snapshot was stored')
    assert.equal(store.textOf('d'), 'ab')
  })

  it('stores a snapshot once the writes of the updates it holds have landed', async () => {
    const store = new MemoryStore()
    await seeded(store, 'd', 'a')
    const { doc } = await loaded(store, 'd', { compactAfterUpdates: 2 })
    const type = editorOf(doc)
    const releaseCompaction = store.hold('compact')
    store.next.append.push({})
    const releaseWrite = store.hold('append')
    assert.equal(await codeOf(doc.take(type(1, 'b'), sender, ONE)), 'ok')
    const written = codeOf(doc.take(type(2, 'C'), sender, ONE))
    releaseCompaction()
    await new Promise(resolve => setImmediate(resolve))
    releaseWrite()
    assert.equal(await written, 'ok')
    await doc.settled()
    assert.notEqual(store.docs.get('d')?.snapshot, null)
    assert.equal(store.textOf('d'), 'abC')
    assert.equal(doc.state, DOC_STATES.LIVE)
  })

  it('closes without waiting for other documents\' compactions, and drops its own that waits its turn', async () => {
    const store = new MemoryStore()
    const compactions = new CompactionQueue()
    await seeded(store, 'x', 'x')
    await seeded(store, 'y', 'y')
    const x = await loaded(store, 'x', { compactAfterUpdates: 2, compactions })
    const y = await loaded(store, 'y', { compactAfterUpdates: 2, compactions })
    const releaseX = store.hold('compact')
    assert.equal(await codeOf(x.doc.take(editorOf(x.doc)(1, '1'), sender, ONE)), 'ok')
    // x's compaction is under way, held in the store; y's falls due behind it.
    assert.equal(await codeOf(y.doc.take(editorOf(y.doc)(1, '1'), sender, ONE)), 'ok')
    const closed = y.doc.close({ compact: false }).then(() => 'closed')
    const waited = new Promise(resolve => setTimeout(() => resolve('waited behind x'), 1000))
    assert.equal(await Promise.race([closed, waited]), 'closed')
    assert.equal(y.doc.state, DOC_STATES.CLOSED)
    releaseX()
    await x.doc.settled()
    assert.equal(store.calls.compact, 1, 'y\'s compaction never ran')
    assert.equal(store.textOf('y'), 'y1')
  })

  it('writes what it took before it closes, then compacts', async () => {
    const store = new MemoryStore()
    await seeded(store, 'd', 'a')
    const { doc } = await loaded(store, 'd')
    const type = editorOf(doc)
    const release = store.hold('append')
    const taken = codeOf(doc.take(type(1, 'b'), sender, ONE))
    const closing = doc.close({ compact: true })
    assert.equal(doc.state, DOC_STATES.CLOSING)
    assert.equal(await codeOf(doc.take(type(2, 'c'), sender, ONE)), 'UNAVAILABLE')
    release()
    await closing
    assert.equal(await taken, 'ok')
    assert.equal(doc.state, DOC_STATES.CLOSED)
    assert.deepEqual(store.docs.get('d')?.log, [])
    assert.equal(store.textOf('d'), 'ab')
  })

  it('refuses on load a stored log that leaves structs pending, and is closed', async () => {
    const store = new MemoryStore()
    await store.append('d', [BASE[1]]) // builds on BASE[0], which storage lacks
    const doc = new LiveDoc('d', { store, compactAfterUpdates: 10, compactions: new CompactionQueue(), maxDocBytes: 1e9, maxDocStructs: 1e6, onUntrusted () {}, onRemoteUpdate () {}, onApplied () {}, logger, metrics })
    await assert.rejects(doc.load(), /pending|does not hold/)
    assert.equal(doc.state, DOC_STATES.CLOSED)
  })
})

describe('DocRegistry', () => {
  /** @param {MemoryStore} store */
  function registryOf (store, onInvalid = (/** @type {string} */ _id) => {}) {
    const config = { docIdleMs: 60_000, compactAfterUpdates: 1000, maxDocBytes: 1e9, maxDocStructs: 1e6 }
    return new DocRegistry({ store: /** @type {any} */ (store), config, logger, metrics, onInvalid })
  }

  it('acts on the copy that was distrusted, never on the one loaded after it', async () => {
    const store = new MemoryStore()
    await seeded(store, 'd', 'a')
    /** @type {string[]} */
    const invalidated = []
    const registry = registryOf(store, (/** @type {string} */ id) => invalidated.push(id))
    const first = await registry.open('d')
    await registry.evict('d')
    const second = await registry.open('d')
    assert.notEqual(second, first)
    await registry.invalidate(first)
    assert.equal(registry.get('d'), second)
    assert.deepEqual(invalidated, [])
    await registry.invalidate(second)
    assert.deepEqual(invalidated, ['d'])
    assert.equal(registry.get('d'), undefined)
  })

  it('loads a document again after its unload failed to compact it', async () => {
    const store = new MemoryStore()
    await seeded(store, 'd', 'a')
    await seeded(store, 'd', 'b')
    const registry = registryOf(store)
    await registry.open('d')
    store.fail('compact', new Error('EIO'))
    await registry.unload('d')
    const again = await registry.open('d')
    assert.equal(again.ydoc.getText(TEXT_NAME).toString().length, 2)
  })

  it('answers UNAVAILABLE when the store fails the load, and loads on the next open', async () => {
    const store = new MemoryStore()
    await seeded(store, 'd', 'a')
    const registry = registryOf(store)
    store.fail('load', new Error('ECONNRESET'))
    assert.equal(await codeOf(registry.open('d')), 'UNAVAILABLE')
    assert.equal((await registry.open('d')).ydoc.getText(TEXT_NAME).toString(), 'a')
  })
})

describe('CompactionQueue', () => {
  it('runs one compaction at a time, each no sooner after the last than it took', async () => {
    const queue = new CompactionQueue()
    /** @type {string[]} */
    const events = []
    /** @type {number[]} */
    const starts = []
    /** @param {string} name */
    const job = name => async () => {
      starts.push(performance.now())
      events.push(`${name} start`)
      await new Promise(resolve => setTimeout(resolve, 30))
      events.push(`${name} end`)
    }
    await Promise.all([queue.run(job('a')), queue.run(job('b'))])
    assert.deepEqual(events, ['a start', 'a end', 'b start', 'b end'])
    assert.ok(starts[1] - starts[0] >= 55, `b started ${starts[1] - starts[0]} ms after a`)
  })

  it('drops a compaction that has not started, and resolves it without running it', async () => {
    const queue = new CompactionQueue()
    let ran = false
    const first = queue.run(() => new Promise(resolve => setTimeout(resolve, 20)))
    const dropped = () => { ran = true; return Promise.resolve() }
    const second = queue.run(dropped)
    queue.cancel(dropped)
    await Promise.all([first, second])
    assert.equal(ran, false)
  })
})

describe('model: whatever fails, in whatever order', () => {
  // BASE is five updates: the first write after a load makes a compaction due.
  const config = { docIdleMs: 60_000, compactAfterUpdates: 6, maxDocBytes: 1e9, maxDocStructs: 1e6, maxDocClients: 1000, maxTypeDepth: 4, rootTypes: [TEXT_NAME] }
  const EDITORS = 3

  const operation = fc.oneof(
    { arbitrary: fc.record({ kind: fc.constant('type'), editor: fc.nat(EDITORS - 1) }), weight: 6 },
    fc.record({ kind: fc.constant('poison') }),
    fc.record({ kind: fc.constant('failWrite') }),
    fc.record({ kind: fc.constant('holdWrite'), fails: fc.boolean() }),
    fc.record({ kind: fc.constant('release') }),
    fc.record({ kind: fc.constant('failCompaction') }),
    fc.record({ kind: fc.constant('holdCompaction') }),
    fc.record({ kind: fc.constant('unload') }),
    fc.record({ kind: fc.constant('evict') }),
    fc.record({ kind: fc.constant('rejoin'), editor: fc.nat(EDITORS - 1) }),
    fc.record({ kind: fc.constant('tick') })
  )

  it('stores every acknowledged update, and no refused one', async () => {
    await fc.assert(fc.asyncProperty(fc.array(operation, { maxLength: 50 }), async (operations) => {
      const store = new MemoryStore()
      for (const update of BASE) await store.append('d', [update])
      const registry = new DocRegistry({ store: /** @type {any} */ (store), config, logger, metrics })
      /** @type {(() => void)[]} */
      const holds = []
      /** @type {{ token: string, outcome: Promise<string> }[]} */
      const sent = []
      /** @type {{ ydoc: Y.Doc, doc: LiveDoc | null }[]} */
      const editors = Array.from({ length: EDITORS }, () => ({ ydoc: new Y.Doc(), doc: null }))
      /** @param {number} e */
      const join = async e => {
        const doc = await registry.open('d').catch(() => null)
        const ydoc = new Y.Doc()
        if (doc) Y.applyUpdate(ydoc, Y.encodeStateAsUpdate(doc.ydoc))
        editors[e] = { ydoc, doc }
      }
      for (let e = 0; e < EDITORS; e++) await join(e)
      let next = 0
      for (const op of operations) {
        const live = registry.get('d')
        if (op.kind === 'type') {
          const editor = editors[op.editor]
          if (!editor.doc || editor.doc !== live) continue
          const token = `<${next++}>`
          /** @type {Uint8Array[]} */
          const updates = []
          const collect = (/** @type {Uint8Array} */ update) => updates.push(update)
          editor.ydoc.on('update', collect)
          editor.ydoc.getText(TEXT_NAME).insert(0, token)
          editor.ydoc.off('update', collect)
          sent.push({ token, outcome: codeOf(acceptUpdate(editor.doc, updates[0], sender, { config }, logger)) })
        } else if (op.kind === 'poison') {
          if (live) sent.push({ token: '', outcome: codeOf(live.take(POISON, sender, ONE)) })
        } else if (op.kind === 'failWrite') {
          store.fail('append', new Error('EIO'))
        } else if (op.kind === 'holdWrite') {
          holds.push(store.hold('append', op.fails ? new Error('EIO') : undefined))
        } else if (op.kind === 'release') {
          holds.shift()?.()
        } else if (op.kind === 'failCompaction') {
          store.fail('compact', new Error('EIO'))
        } else if (op.kind === 'holdCompaction') {
          holds.push(store.hold('compact'))
        } else if (op.kind === 'unload') {
          registry.unload('d').catch(() => {})
        } else if (op.kind === 'evict') {
          registry.evict('d').catch(() => {})
        } else if (op.kind === 'rejoin') {
          await Promise.race([join(op.editor), new Promise(resolve => setTimeout(resolve, 5))])
        } else {
          await new Promise(resolve => setImmediate(resolve))
        }
      }
      // Every call held is let through; then whatever was sent has its answer.
      store.next = { append: [], compact: [], load: [] }
      for (const release of holds) release()
      const outcomes = await Promise.all(sent.map(({ outcome }) => outcome))
      await registry.closeAll()
      // What storage holds loads whole: nothing in it builds on what it lacks.
      const reloaded = new LiveDoc('d', { store, compactAfterUpdates: 1000, compactions: new CompactionQueue(), maxDocBytes: 1e9, maxDocStructs: 1e6, onUntrusted () {}, onRemoteUpdate () {}, onApplied () {}, logger, metrics })
      await reloaded.load()
      const text = reloaded.ydoc.getText(TEXT_NAME).toString()
      sent.forEach(({ token }, i) => {
        if (token === '') return
        if (outcomes[i] === 'ok') assert.ok(text.includes(token), `${token} was acknowledged but is not stored: ${text}`)
        else assert.ok(!text.includes(token), `${token} was refused (${outcomes[i]}) but is stored: ${text}`)
      })
      await reloaded.close({ compact: false })
    }), {
      numRuns: 200,
      // A write held, the next held to be refused; releasing the first makes a compaction due
      // while the refused one is applied and not yet written.
      examples: [[[{ kind: 'holdCompaction' }, { kind: 'holdWrite', fails: false }, { kind: 'type', editor: 0 }, { kind: 'tick' },
        { kind: 'holdWrite', fails: true }, { kind: 'type', editor: 0 }, { kind: 'release' }, { kind: 'release' }, { kind: 'tick' }, { kind: 'tick' }]]]
    })
  })
})
