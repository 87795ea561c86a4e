import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import fs from 'node:fs'
import { appendFile, mkdir, open, readdir, stat } from 'node:fs/promises'
import { syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import pino from 'pino'
import { loadConfig } from '../server/config.js'
import { EXIT_CODES } from '../server/exit-codes.js'
import { openBackend } from '../server/storage/backend.js'
import { StorageHealth } from '../server/storage/storage-health.js'
import { KINDS, LOG_DIR, UpdateLog, encodeRecord, readRecords } from '../server/storage/update-log.js'
import { spawnServer, startChildServer } from './helpers/child-server.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { api, contentOf, createSession, startServer, tempDataDir } from './helpers/server.js'

// The embedded store acknowledges an update once it is in its update log (DATA_DIR/update-log), and
// moves it to LevelDB afterwards. A server killed with updates only in the log must serve them at
// its next start; a damaged log must stop the start while its records are still on disk.

/** @type {{ dir: string, remove: () => Promise<void> }} */
let data
before(async () => { data = await tempDataDir() })
after(() => data.remove())

/**
 * A server on `dir` whose editor types `count` edits, each acknowledged, then is killed with SIGKILL
 * at once: the last edits are in the update log and nowhere else.
 * @param {string} dir
 * @param {number} count
 */
async function typeThenKill (dir, count) {
  const server = await startChildServer({ DATA_DIR: dir, UPDATES_PER_SECOND: '0' })
  const session = await createSession(server.url)
  const editor = new TestEditor(server.url)
  await editor.join(session.id)
  for (let i = 0; i < count; i++) assert.deepEqual(await editor.insert(session.id, 0, `${i};`), { ok: true })
  const text = editor.text(session.id)
  await server.stop('SIGKILL')
  editor.close()
  return { id: session.id, text }
}

/** @param {string} dir */
async function logFiles (dir) {
  return (await readdir(join(dir, LOG_DIR))).map(name => join(dir, LOG_DIR, name))
}

describe('the update log', () => {
  it('serves after a SIGKILL every edit acknowledged just before it, and leaves no log file after a clean stop', async (t) => {
    const dir = join(data.dir, 'killed')
    const { id, text } = await typeThenKill(dir, 50)
    assert.ok((await logFiles(dir)).length > 0, 'the killed server left its update log')
    const server = await startChildServer({ DATA_DIR: dir })
    t.after(() => server.stop('SIGKILL'))
    assert.equal(await contentOf(server.url, id), text)
    assert.ok(server.logs.some(entry => entry.msg === 'the update log a previous run left is in the database'))
    assert.equal((await server.stop('SIGTERM')).code, 0)
    assert.deepEqual(await logFiles(dir), [], 'a clean stop moves everything and deletes the log')

    const again = await startChildServer({ DATA_DIR: dir })
    t.after(() => again.stop('SIGKILL'))
    assert.equal(await contentOf(again.url, id), text)
  })

  it('keeps, with SYNC_WRITES, an update acknowledged while the log rotated under its fdatasync, through a SIGKILL right after', async (t) => {
    const dir = join(data.dir, 'rotated')
    const child = spawn(process.execPath, [join(import.meta.dirname, 'helpers/append-during-rotation.js')], {
      env: { ...process.env, DATA_DIR: dir },
      stdio: ['ignore', 'pipe', 'inherit']
    })
    t.after(() => child.kill('SIGKILL'))
    let output = ''
    child.stdout.setEncoding('utf8')
    for await (const chunk of child.stdout) {
      output += chunk
      if (output.includes('acked')) break
    }
    assert.ok(output.includes('acked'), 'the append was acknowledged')
    child.kill('SIGKILL')
    await once(child, 'exit')

    const logger = pino({ level: 'silent' })
    const backend = await openBackend(loadConfig({ DATA_DIR: dir }), logger, new StorageHealth(logger, { inc () {} }))
    t.after(() => backend.close())
    // Kept; twice if the kill came before the rotated file was deleted (moved again at start: no harm).
    const acked = (await backend.docStore.load('acked')).updates.map(update => [...update])
    assert.ok(acked.length > 0, 'the acknowledged update is kept')
    for (const update of acked) assert.deepEqual(update, [1, 2, 3])
    assert.ok((await backend.docStore.load('bulk')).updates.length >= 17)
  })

  it('does not bring back a document deleted just before a SIGKILL', async (t) => {
    const dir = join(data.dir, 'deleted')
    const server = await startChildServer({ DATA_DIR: dir, UPDATES_PER_SECOND: '0' })
    const kept = await createSession(server.url, { content: 'kept\n' })
    const gone = await createSession(server.url, { content: 'gone\n' })
    const editor = new TestEditor(server.url)
    await editor.join(gone.id)
    for (let i = 0; i < 10; i++) assert.deepEqual(await editor.insert(gone.id, 0, `${i};`), { ok: true })
    editor.close()
    assert.equal((await api(server.url, `/api/sessions/${gone.id}`, { method: 'DELETE' })).status, 204)
    await server.stop('SIGKILL')

    const tandem = await startServer({ dataDir: dir })
    t.after(() => tandem.close())
    assert.deepEqual((await tandem.server.registry.store.load(gone.id)).updates, [], 'nothing of the deleted document is stored')
    assert.equal(await contentOf(tandem.url, kept.id), 'kept\n')
  })

  it('starts after a crash whose last write was cut short, drops that record with a warning, and serves every acknowledged edit', async (t) => {
    const dir = join(data.dir, 'torn')
    const { id, text } = await typeThenKill(dir, 30)
    const files = await logFiles(dir)
    const last = files[files.length - 1]
    // A record's header announcing 100 bytes, and 10 of them: a write the crash cut short.
    const header = Buffer.alloc(8)
    header.writeUInt32LE(100, 0)
    await appendFile(last, Buffer.concat([header, Buffer.alloc(10, 7)]))

    const server = await startChildServer({ DATA_DIR: dir })
    t.after(() => server.stop('SIGKILL'))
    const warning = server.logs.find(entry => /incomplete record/.test(entry.msg))
    assert.equal(warning?.droppedBytes, 18)
    assert.equal(warning.droppedRecords, 1)
    assert.match(warning.msg, /1 record \(18 bytes\), possibly acknowledged/)
    assert.equal(await contentOf(server.url, id), text)
  })

  it('refuses to start, every time, when a byte of the update log is flipped, naming the file and keeping it', async () => {
    const dir = join(data.dir, 'flipped')
    await typeThenKill(dir, 30)
    const [file] = await logFiles(dir)
    const size = (await stat(file)).size
    const handle = await open(file, 'r+')
    const byte = Buffer.alloc(1)
    await handle.read(byte, 0, 1, size - 2)
    byte[0] ^= 0xff
    await handle.write(byte, 0, 1, size - 2)
    await handle.close()

    for (let start = 0; start < 2; start++) {
      const { child, logs, output, lines } = spawnServer({ DATA_DIR: dir })
      const [[code]] = await Promise.all([once(child, 'exit'), once(lines, 'close')])
      assert.equal(code, EXIT_CODES.STORAGE_CORRUPT, `logs: ${JSON.stringify(logs)} stderr: ${output.stderr}`)
      const refusal = logs.find(entry => entry.reason === 'STORAGE_CORRUPT')
      assert.equal(refusal?.file, file)
      assert.match(refusal.msg, /checksum mismatch/)
      assert.equal((await stat(file)).size, size, 'the damaged log is left as it was')
    }
  })
})

/**
 * Replaces a function of node:fs (the log's named imports see it) until the test ends.
 * @param {import('node:test').TestContext} t
 * @param {'fdatasync' | 'fsyncSync'} name
 * @param {(original: any) => any} replacement
 */
function patchFs (t, name, replacement) {
  const patched = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (fs))
  const original = patched[name]
  patched[name] = replacement(original)
  syncBuiltinESMExports()
  t.after(() => { patched[name] = original; syncBuiltinESMExports() })
}

describe('the update log\'s records', () => {
  it('reads back an append with its history: the time, each update\'s author or none, and the updates', () => {
    const updates = [new Uint8Array([1, 2, 3]), new Uint8Array([4])]
    const history = { at: 1795941960123, by: ['ada', null] }
    const { records, damage, tornBytes } = readRecords(encodeRecord(KINDS.APPEND, 'doc', updates, history))
    assert.equal(damage, null)
    assert.equal(tornBytes, 0)
    assert.deepEqual(records.map(({ kind, docId, updates, history }) => ({ kind, docId, updates: updates.map(update => [...update]), history })),
      [{ kind: KINDS.APPEND, docId: 'doc', updates: [[1, 2, 3], [4]], history }])
    assert.deepEqual(readRecords(encodeRecord(KINDS.APPEND, 'doc', updates)).records[0].history, null)
  })

  it('calls a record whose history names a different number of authors than it holds updates damaged, not whole', () => {
    const record = encodeRecord(KINDS.APPEND, 'doc', [new Uint8Array([1])], { at: 1, by: ['ada', 'bob'] })
    assert.deepEqual(readRecords(record).damage, { offset: 0, problem: 'bad record' })
  })
})

describe('the update log\'s files', () => {
  /** Descriptors this process holds open (Linux). */
  const openFds = () => fs.readdirSync('/proc/self/fd').length
  const record = () => encodeRecord(KINDS.APPEND, 'doc', [new Uint8Array([1, 2, 3])])

  it('closes a file rotated away during its fdatasync once the sync answers, not before', { skip: !fs.existsSync('/proc/self/fd') }, async (t) => {
    const dir = join(data.dir, 'files-sync')
    await mkdir(dir, { recursive: true })
    /** @type {(() => void)[]} */
    const held = []
    patchFs(t, 'fdatasync', (fdatasync) => (/** @type {number} */ fd, /** @type {fs.NoParamCallback} */ callback) => {
      held.push(() => fdatasync(fd, callback))
    })
    const log = new UpdateLog(dir, 1, { sync: true })
    const before = openFds()
    const written = log.write(record())
    while (held.length === 0) await new Promise(resolve => setImmediate(resolve))
    log.rotateIfPast(0)
    assert.equal(openFds(), before + 1, 'the rotated file stays open while its sync is held')
    held.splice(0).forEach(call => call())
    await written
    assert.equal(openFds(), before, 'and is closed once the sync answered')
    log.close({ empty: true })
  })

  it('keeps its file, and no descriptor of the next one, when a rotation\'s directory sync fails', { skip: !fs.existsSync('/proc/self/fd') }, async (t) => {
    const dir = join(data.dir, 'files-dir-sync')
    await mkdir(dir, { recursive: true })
    const log = new UpdateLog(dir, 1, { sync: true })
    await log.write(record())
    const before = openFds()
    patchFs(t, 'fsyncSync', () => () => { throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }) })
    assert.throws(() => log.rotateIfPast(0), /EIO/)
    assert.equal(openFds(), before)
    assert.equal(log.file, 1, 'still writing to the first file')
    await log.write(record())
    log.close({ empty: true })
  })

  /**
   * A log in a directory of its own, and the number of records its file holds, read synchronously:
   * a test must not let the turn end between a write and its check.
   * @param {string} name
   * @param {{ sync: boolean }} options
   */
  async function logIn (name, options) {
    const dir = join(data.dir, name)
    await mkdir(dir, { recursive: true })
    const log = new UpdateLog(dir, 1, options)
    const [file] = await readdir(dir)
    return { log, written: () => fs.statSync(join(dir, file)).size / record().byteLength }
  }

  it('writes each record the moment it is given, so that its ACK need not wait for the end of the turn', async () => {
    const { log, written } = await logIn('files-at-once', { sync: false })
    const writes = []
    for (let i = 1; i <= 3; i++) {
      writes.push(log.write(record()))
      assert.equal(written(), i, `record ${i} is in the file as write() returns`)
    }
    await Promise.all(writes)
    log.close({ empty: true })
  })

  it('writes the records given during a sync together, once it has ended (SYNC_WRITES)', async (t) => {
    const { log, written } = await logIn('files-group-commit', { sync: true })
    /** @type {(() => void)[]} */
    const syncs = []
    patchFs(t, 'fdatasync', (fdatasync) => (/** @type {number} */ fd, /** @type {fs.NoParamCallback} */ callback) => {
      syncs.push(() => fdatasync(fd, callback))
    })
    const first = log.write(record())
    assert.equal(written(), 1, 'the first at once, then its sync')
    const rest = [log.write(record()), log.write(record())]
    assert.equal(written(), 1, 'the others wait for the sync')
    assert.equal(syncs.length, 1)
    syncs[0]()
    await first
    assert.equal(written(), 3, 'written together once it has ended')
    await eventually(() => syncs.length === 2)
    syncs[1]()
    await Promise.all(rest)
    log.close({ empty: true })
  })
})

describe('the update log: an append is refused and never stored, or stored and acknowledged', () => {
  const logger = pino({ level: 'silent' })
  /** @param {string} dir */
  const openStore = async (dir) => {
    const backend = await openBackend(loadConfig({ DATA_DIR: dir, SYNC_WRITES: 'true' }), logger, new StorageHealth(logger, { inc () {} }))
    return { backend, store: /** @type {import('../server/storage/level-doc-store.js').LevelDocStore} */ (backend.docStore) }
  }
  /** @param {import('../server/storage/level-doc-store.js').LevelDocStore} store @param {string} docId @param {number} byte */
  const answer = (store, docId, byte) => store.append(docId, [new Uint8Array([byte])]).then(() => 'ok', (/** @type {any} */ err) => err.code)
  /** @param {import('../server/storage/level-doc-store.js').LevelDocStore} store @param {string} docId */
  const stored = async (store, docId) => (await store.load(docId)).updates.map(update => [...update])
  const gate = () => {
    /** @type {() => void} */
    let release = () => {}
    const held = new Promise(resolve => { release = () => resolve(undefined) })
    return { held, release }
  }

  it('acknowledges appends while moves to LevelDB fail, and serves them after a restart', async (t) => {
    const dir = join(data.dir, 'failing-move')
    const { backend, store } = await openStore(dir)
    t.after(() => backend.close())
    // Every move to LevelDB fails, as LevelDB's batch does on an I/O error; the database's reopen
    // waits until the test lets it go on, so the window in which it is failed lasts.
    const docs = /** @type {any} */ (store.docs)
    docs.batch = () => Promise.reject(Object.assign(new Error('IO error: 000005.log: Input/output error'), { code: 'LEVEL_IO_ERROR' }))
    const reopen = gate()
    const db = /** @type {any} */ (store.guard.db)
    const open = db.open.bind(db)
    db.open = async () => { await reopen.held; return open() }
    /** @type {(() => void)[]} */
    const syncs = []
    let holdSyncs = false
    patchFs(t, 'fdatasync', (fdatasync) => (/** @type {number} */ fd, /** @type {fs.NoParamCallback} */ callback) => {
      if (holdSyncs) syncs.push(() => fdatasync(fd, callback))
      else fdatasync(fd, callback)
    })

    assert.equal(await answer(store, 'before', 1), 'ok')
    // Its sync under way when the move of 'before' fails.
    holdSyncs = true
    const duringSync = answer(store, 'during-sync', 2)
    await eventually(() => !store.guard.ready, { what: 'the move failed' })
    holdSyncs = false
    syncs.splice(0).forEach(sync => sync())
    assert.equal(await duringSync, 'ok', 'an append the log took while a move failed')
    assert.equal(store.guard.ready, false)
    assert.equal(await answer(store, 'while-failed', 3), 'ok', 'an append while LevelDB is failed')
    for (const [docId, byte] of [['before', 1], ['during-sync', 2], ['while-failed', 3]]) {
      assert.deepEqual(await stored(store, /** @type {string} */ (docId)), [[byte]])
    }
    reopen.release()
    await backend.close()

    const restarted = await openStore(dir)
    t.after(() => restarted.backend.close())
    for (const [docId, byte] of [['before', 1], ['during-sync', 2], ['while-failed', 3]]) {
      assert.deepEqual(await stored(restarted.store, /** @type {string} */ (docId)), [[byte]], `${docId} after a restart`)
    }
  })

  it('cuts an append whose sync failed from the log: refused, it is not served, now or after a restart', async (t) => {
    const dir = join(data.dir, 'failing-sync')
    const { backend, store } = await openStore(dir)
    t.after(() => backend.close())
    let failSync = false
    patchFs(t, 'fdatasync', (fdatasync) => (/** @type {number} */ fd, /** @type {fs.NoParamCallback} */ callback) => {
      if (failSync) setImmediate(() => callback(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' })))
      else fdatasync(fd, callback)
    })
    assert.equal(await answer(store, 'doc', 1), 'ok')
    failSync = true
    assert.equal(await answer(store, 'doc', 2), 'UNAVAILABLE')
    failSync = false
    // Reported as a failed write: storage reopens the database, and finds the disk writable again.
    await eventually(() => store.guard.ready, { what: 'storage reopened' })
    assert.equal(await answer(store, 'doc', 3), 'ok')
    assert.deepEqual(await stored(store, 'doc'), [[1], [3]])
    // What a kill -9 now would leave for the next start to move to LevelDB.
    const logged = (await logFiles(dir)).flatMap(file => readRecords(fs.readFileSync(file)).records)
    assert.deepEqual(logged.flatMap(({ updates }) => updates.map(update => [...update])), [[1], [3]])
    await backend.close()
    const restarted = await openStore(dir)
    t.after(() => restarted.backend.close())
    assert.deepEqual(await stored(restarted.store, 'doc'), [[1], [3]])
  })
})
