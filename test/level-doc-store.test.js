import assert from 'node:assert/strict'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import pino from 'pino'
import * as Y from 'yjs'
import { TEXT_NAME } from '../isomorphic/events.js'
import { LevelDocStore } from '../server/storage/level-doc-store.js'
import { LevelGuard } from '../server/storage/level-guard.js'
import { openLevel } from '../server/storage/level.js'
import { StorageHealth } from '../server/storage/storage-health.js'
import { eventually } from './helpers/eventually.js'
import { tempDataDir } from './helpers/server.js'
import { updateOf } from './helpers/update-of.js'

// The embedded store's compaction against a real LevelDB, with appends, a delete or a failure at
// each of its awaits: reading where the log ends (a store just opened), making the snapshot, the
// snapshot's put, and the two clears. Whatever happens, every update an append acknowledged is read
// back, in this process and after a reopen; a failed compaction removes nothing the snapshot lacks.

const logger = pino({ level: 'silent' })
const DOC = 'doc'

/** @type {{ dir: string, remove: () => Promise<void> }} */
let data
before(async () => { data = await tempDataDir() })
after(() => data.remove())

let dirs = 0

/** Opens the embedded store on `dir` as openBackend does, without a server. @param {string} dir */
async function openStore (dir) {
  const db = await openLevel(dir, logger)
  const guard = new LevelGuard(db, { health: new StorageHealth(logger, { inc () {} }), logger })
  const store = await LevelDocStore.open(guard, { dataDir: dir, syncWrites: false }, logger)
  return {
    store,
    guard,
    async close () {
      await store.close()
      await guard.close()
      await db.close()
    }
  }
}

/** An editor's copy of the document: each token typed at the end of its text, then appended. */
class Writer {
  ydoc = new Y.Doc()
  /** @type {string[]} every token typed, each acknowledged by the store */
  tokens = []

  /** @param {string} token */
  update (token) {
    this.tokens.push(token)
    return updateOf(this.ydoc, text => text.insert(text.length, token))
  }

  /** @param {LevelDocStore} store @param {string} token */
  async type (store, token) {
    await store.append(DOC, [this.update(token)])
  }

  /** The text every acknowledged update makes, in the order typed. */
  get text () {
    return this.tokens.join('')
  }

  /** A snapshot of everything typed so far, as LiveDoc encodes one when the store asks for it. */
  snapshot () {
    return { snapshot: Y.encodeStateAsUpdate(this.ydoc), position: null }
  }
}

/** The text what the store loads makes. @param {LevelDocStore} store */
async function storedText (store) {
  const ydoc = new Y.Doc()
  for (const update of (await store.load(DOC)).updates) Y.applyUpdate(ydoc, update)
  return ydoc.getText(TEXT_NAME).toString()
}

/** The document's log entries in LevelDB, single-update (`!u!`) and several-update (`!b!`). @param {LevelDocStore} store */
async function entryKeys (store) {
  const keys = await store.docs.keys({ gt: `${DOC}!`, lt: `${DOC}!~` }).all()
  return keys.filter(key => /^[^!]+!(u|b)!/.test(key))
}

/** @param {LevelDocStore} store */
const snapshotStored = async (store) => (await store.docs.get(`${DOC}!s`)) !== undefined

/**
 * A store on a fresh directory whose document holds an entry of the single-update kind earlier
 * versions wrote, entries moved to LevelDB, and, after a reopen (so the store does not know yet
 * where its log ends), one update still waiting for its move.
 */
async function storeWithLog () {
  const dir = join(data.dir, `store-${++dirs}`)
  const writer = new Writer()
  const first = await openStore(dir)
  await first.store.docs.put(`${DOC}!u!000000000000`, writer.update('<legacy>'))
  for (let i = 0; i < 3; i++) {
    await writer.type(first.store, `<moved${i}>`)
    await movedInto(first.store)
  }
  await first.close()
  const opened = await openStore(dir)
  await writer.type(opened.store, '<waiting>')
  return { dir, writer, ...opened }
}

/**
 * Resolves once a move has written a new entry to LevelDB, from now. The entries are listed first: call
 * it before or just after the append it waits for (a move runs 100 ms after an append at the soonest).
 * @param {LevelDocStore} store
 */
async function movedInto (store) {
  const before = (await entryKeys(store)).filter(key => key.includes('!b!'))
  await eventually(async () => (await entryKeys(store)).some(key => key.includes('!b!') && !before.includes(key)), { what: 'the append moved to LevelDB' })
}

/**
 * Runs `hook` once the `call`th call (from now) of `target[method]` has resolved, before its caller
 * goes on: whatever the hook does lands during that await.
 * @param {any} target @param {string} method @param {number} call @param {() => Promise<unknown>} hook
 */
function afterCall (target, method, call, hook) {
  const original = target[method]
  let calls = 0
  target[method] = async function (/** @type {unknown[]} */ ...args) {
    if (++calls < call) return original.apply(this, args)
    target[method] = original
    const result = await original.apply(this, args)
    await hook()
    return result
  }
}

/**
 * Runs `hook` before the `call`th call (from now) of `target[method]` is made.
 * @param {any} target @param {string} method @param {number} call @param {() => Promise<unknown>} hook
 */
function beforeCall (target, method, call, hook) {
  const original = target[method]
  let calls = 0
  target[method] = async function (/** @type {unknown[]} */ ...args) {
    if (++calls < call) return original.apply(this, args)
    target[method] = original
    await hook()
    return original.apply(this, args)
  }
}

/**
 * Makes the `call`th call (from now) of `target[method]` fail as LevelDB does on a full disk,
 * after it has taken effect (`applied`: the failure is reported, not the write lost) or before.
 * @param {any} target @param {string} method @param {{ call?: number, applied: boolean }} options
 */
function failOnce (target, method, { call = 1, applied }) {
  const original = target[method]
  let calls = 0
  target[method] = async function (/** @type {unknown[]} */ ...args) {
    if (++calls < call) return original.apply(this, args)
    target[method] = original
    if (applied) await original.apply(this, args)
    throw Object.assign(new Error('IO error: 000007.log: No space left on device'), { code: 'LEVEL_IO_ERROR' })
  }
}

/**
 * @typedef {object} Await
 * @property {string} name
 * @property {(store: LevelDocStore, hook: () => Promise<unknown>) => void} during has `hook` run
 *   during this await of the compaction, which goes on once the hook has ended
 * @property {boolean} [inSnapshot] the hook runs in makeSnapshot, once the snapshot is encoded
 */

/**
 * The awaits of a compaction. The read of where the log ends is the first read once `compact` is
 * called (a store just opened does not know it yet).
 * @type {Await[]}
 */
const AWAITS = [
  { name: 'while it reads where the log ends', during: (store, hook) => afterCall(store.guard, 'read', 1, hook) },
  { name: 'while the snapshot is made', during: () => {}, inSnapshot: true },
  { name: 'while the snapshot is put', during: (store, hook) => afterCall(store.docs, 'put', 1, hook) },
  { name: 'between the snapshot put and the clears', during: (store, hook) => beforeCall(store.docs, 'clear', 1, hook) },
  { name: 'between the two clears', during: (store, hook) => afterCall(store.docs, 'clear', 1, hook) },
  { name: 'during the last clear', during: (store, hook) => afterCall(store.docs, 'clear', 2, hook) }
]

/**
 * Compacts, running `hook` during the await `at`.
 * @param {Awaited<ReturnType<typeof storeWithLog>>} opened @param {Await} at @param {() => Promise<unknown>} hook
 */
function compactWith ({ store, writer }, at, hook) {
  at.during(store, hook)
  return store.compact(DOC, async () => {
    const snapshot = writer.snapshot()
    if (at.inSnapshot) await hook()
    return snapshot
  })
}

describe('LevelDocStore.compact', () => {
  for (const at of AWAITS) {
    for (const moved of [false, true]) {
      it(`keeps, in order and through a reopen, updates appended ${at.name}${moved ? ' and moved to LevelDB meanwhile' : ''}`, async (t) => {
        const opened = await storeWithLog()
        const { store, writer } = opened
        t.after(() => opened.close())
        const before = await entryKeys(store)
        let typed = 0
        const compacted = await compactWith(opened, at, async () => {
          for (let i = 0; i < 2; i++) {
            const moving = moved ? movedInto(store) : null
            await writer.type(store, `<during${typed++}>`)
            await moving
          }
        })
        assert.equal(compacted, true)
        assert.equal(typed, 2, 'the appends ran during the compaction')
        await writer.type(store, '<after>')

        assert.equal(await storedText(store), writer.text)
        assert.equal(await snapshotStored(store), true)
        const left = await entryKeys(store)
        assert.deepEqual(before.filter(key => left.includes(key)), [], 'every entry the snapshot covers is removed')

        await opened.close()
        const reopened = await openStore(opened.dir)
        t.after(() => reopened.close())
        assert.equal(await storedText(reopened.store), writer.text)
      })
    }
  }

  it('removes nothing when the snapshot cannot be made, and loads as before, through a reopen', async (t) => {
    const opened = await storeWithLog()
    const { store, writer } = opened
    t.after(() => opened.close())
    const before = await entryKeys(store)
    await assert.rejects(store.compact(DOC, async () => {
      await writer.type(store, '<during>')
      throw new Error('the document could not be encoded')
    }), /could not be encoded/)

    assert.equal(await storedText(store), writer.text)
    assert.equal(await snapshotStored(store), false)
    const left = await entryKeys(store)
    assert.deepEqual(before.filter(key => !left.includes(key)), [], 'no entry is removed')

    await opened.close()
    const reopened = await openStore(opened.dir)
    t.after(() => reopened.close())
    assert.equal(await storedText(reopened.store), writer.text)
  })

  const WRITES = [
    { name: 'the snapshot put', method: 'put', call: 1 },
    { name: 'the clear of single-update entries', method: 'clear', call: 1 },
    { name: 'the clear of the covered entries', method: 'clear', call: 2 }
  ]
  for (const write of WRITES) {
    for (const applied of [false, true]) {
      it(`loses no update when ${write.name} fails ${applied ? 'after taking effect' : 'without taking effect'}, in this process and after a reopen`, async (t) => {
        const opened = await storeWithLog()
        const { store, writer, guard } = opened
        t.after(() => opened.close())
        failOnce(store.docs, write.method, { call: write.call, applied })
        const inSnapshot = /** @type {Await} */ (AWAITS.find(at => at.inSnapshot))
        await assert.rejects(compactWith(opened, inSnapshot, () => writer.type(store, '<during>')), { code: 'UNAVAILABLE' })
        // Acknowledged while LevelDB is failed and reopening: the update log holds it.
        await writer.type(store, '<while-failed>')
        await eventually(() => guard.ready, { what: 'the database reopened' })
        assert.equal(await storedText(store), writer.text)

        await writer.type(store, '<after>')
        await movedInto(store)
        assert.equal(await storedText(store), writer.text)

        await opened.close()
        const reopened = await openStore(opened.dir)
        t.after(() => reopened.close())
        assert.equal(await storedText(reopened.store), writer.text)
      })
    }
  }

  /** A delete waits for a snapshot being put: it starts as the put does, and the compaction goes on meanwhile. @type {Await} */
  const whilePut = { name: 'while the snapshot is put', during: (store, hook) => beforeCall(store.docs, 'put', 1, async () => { hook() }) }
  for (const at of AWAITS.map(at => at.name === whilePut.name ? whilePut : at)) {
    it(`leaves a document deleted ${at.name} deleted, through a reopen`, async (t) => {
      const opened = await storeWithLog()
      const { store } = opened
      t.after(() => opened.close())
      /** @type {Promise<void> | undefined} */
      let deleting
      await compactWith(opened, at, () => (deleting = store.delete(DOC)))
      assert.ok(deleting, 'the delete ran during the compaction')
      await deleting

      assert.deepEqual((await store.load(DOC)).updates, [])
      assert.deepEqual(await entryKeys(store), [])
      assert.equal(await snapshotStored(store), false)

      await opened.close()
      const reopened = await openStore(opened.dir)
      t.after(() => reopened.close())
      assert.deepEqual((await reopened.store.load(DOC)).updates, [])
    })
  }
})
