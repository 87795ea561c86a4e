// `npm run bench -- history [--hours N] [--store leveldb|redis|both]`: what a session's history costs.
// One hour of synthetic typing (5 editors, 3 keystrokes/s each, a backspace in 8, each editor in its
// own line) is made by one Y.Doc acting as the 5 clients, then written through the server's own
// DocStore.append with explicit times and authors, in one append per 200 ms as group commit makes
// them: the same bytes and keys as editors on sockets would leave, without an hour of waiting. Then,
// on a real server (HTTP on loopback): the bytes history holds, before and after its compaction;
// `content?at=` latency over 50 random times of the hour; and the document's load time with `--hours`
// (default 8) of history against none (the hour's keystrokes stored again for each hour, all kept one
// by one; medians of alternating loads as LiveDoc.load makes them: the store's load, then applying it,
// with LevelDB's tables compacted first so that both read the same kind of tables).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as Y from 'yjs'
import { createServer } from '../server/app.js'
import { loadConfig } from '../server/config.js'
import { TEXT_NAME } from '../isomorphic/events.js'
import { createHistogram, recordMs, summarize } from '../loadtest/histogram.js'
import { startRedisServer } from './redis-process.js'

const EDITORS = 5
const KEYS_PER_SECOND = 3
const HOUR_MS = 3600 * 1000
const APPEND_EVERY_MS = 200
const AT_REQUESTS = 50
const LOAD_RUNS = 31
const IN_FLIGHT = 64
const API_KEY = 'history-bench-api-key'

/** One hour of typing: each update with its time offset (ms) and author. */
function typeOneHour () {
  const ydoc = new Y.Doc()
  const text = ydoc.getText(TEXT_NAME)
  /** @type {{ offset: number, by: string, update: Uint8Array }[]} */
  const typed = []
  let current = { offset: 0, by: '' }
  ydoc.on('update', (/** @type {Uint8Array} */ update) => typed.push({ ...current, update }))
  const lengths = new Array(EDITORS).fill(0)
  const keystrokes = EDITORS * KEYS_PER_SECOND * HOUR_MS / 1000
  for (let i = 0; i < keystrokes; i++) {
    const editor = i % EDITORS
    // One Y.Doc plays every editor: each keystroke is made by that editor's Yjs client.
    ydoc.clientID = 1000 + editor
    current = { offset: Math.floor(i * 1000 / (EDITORS * KEYS_PER_SECOND)), by: `editor-${editor}` }
    const end = lengths.slice(0, editor + 1).reduce((sum, length) => sum + length, 0)
    if (i % 8 === 7 && lengths[editor] > 0) {
      text.delete(end - 1, 1)
      lengths[editor]--
    } else {
      text.insert(end, i % 40 === 39 ? '\n' : 'abcdefghij'[i % 10])
      lengths[editor]++
    }
  }
  return { typed, state: Y.encodeStateAsUpdate(ydoc), text: text.toString() }
}

/**
 * One append per APPEND_EVERY_MS of the hour, starting at `start`, kept in history or not.
 * @param {import('../server/storage/doc-store.js').DocStore} store @param {string} id
 * @param {ReturnType<typeof typeOneHour>['typed']} typed @param {number} start @param {boolean} [kept]
 */
async function writeHour (store, id, typed, start, kept = true) {
  /** @type {Map<number, typeof typed>} */
  const windows = new Map()
  for (const entry of typed) {
    const window = Math.floor(entry.offset / APPEND_EVERY_MS)
    windows.get(window)?.push(entry) ?? windows.set(window, [entry])
  }
  const appends = [...windows].map(([window, entries]) => () => store.append(id, entries.map(entry => entry.update), null,
    kept ? { at: start + (window + 1) * APPEND_EVERY_MS, by: entries.map(entry => entry.by) } : undefined))
  for (let i = 0; i < appends.length; i += IN_FLIGHT) await Promise.all(appends.slice(i, i + IN_FLIGHT).map(append => append()))
}

/** @param {string} storage @param {{ hours: number }} options @param {{ redisUrl?: string }} backend */
async function measure (storage, { hours }, { redisUrl }) {
  const dir = await mkdtemp(join(tmpdir(), 'tandem-bench-'))
  let offset = 0
  const now = () => Date.now() + offset
  const config = loadConfig({}, {
    dataDir: dir,
    redisUrl: redisUrl ?? '',
    logLevel: 'silent',
    apiKey: API_KEY,
    historyRetentionMs: 30 * 24 * HOUR_MS,
    restPerMinute: 0,
    compactAfterUpdates: 1e7
  })
  const server = await createServer(config, { now })
  const { url } = await server.listen(0, '127.0.0.1')
  const headers = { authorization: `Bearer ${API_KEY}` }
  try {
    const { typed, state, text } = typeOneHour()
    const store = server.backend.docStore

    // One hour of typing, then the clock is moved past it.
    const session = await server.sessions.create({ name: 'hour.txt' })
    const start = Date.parse(session.createdAt) + 1000
    await writeHour(store, session.id, typed, start)
    offset = HOUR_MS + 60000
    await compacted(store, session.id, state)
    const rawBytes = await historyBytes(server, session.id)
    await server.history.compact(session.id)
    const keyframedBytes = await historyBytes(server, session.id)

    const latency = createHistogram()
    for (let i = 0; i < AT_REQUESTS; i++) {
      const at = new Date(start + Math.floor(Math.random() * HOUR_MS)).toISOString()
      const started = performance.now()
      const res = await fetch(`${url}/api/sessions/${session.id}/content?at=${at}`, { headers })
      await res.text()
      recordMs(latency, performance.now() - started)
      if (res.status !== 200) throw new Error(`content?at= answered ${res.status}`)
    }
    const final = await fetch(`${url}/api/sessions/${session.id}/content?at=${new Date(start + HOUR_MS).toISOString()}`, { headers }).then(res => res.text())
    if (final !== text) throw new Error('content?at= the end of the hour is not the text typed')
    const at = /** @type {import('../loadtest/histogram.js').LatencySummary} */ (summarize(latency))
    const overviewStarted = performance.now()
    const overview = await fetch(`${url}/api/sessions/${session.id}/history`, { headers }).then(res => res.json())
    const overviewMs = performance.now() - overviewStarted
    if (overview.buckets.length < 60) throw new Error('/history has fewer buckets than the hour has minutes')

    // Two hours on, the hour is folded into minutes.
    offset = 3 * HOUR_MS
    await server.history.compact(session.id)
    const foldedBytes = await historyBytes(server, session.id)

    // Load time: the same document, written and compacted alike, with hours of history and with none.
    const withHistory = (await server.sessions.create({ name: 'long.txt' })).id
    const without = (await server.sessions.create({ name: 'none.txt' })).id
    for (let hour = 0; hour < hours; hour++) {
      await writeHour(store, withHistory, typed, start + hour * HOUR_MS)
      await writeHour(store, without, typed, start + hour * HOUR_MS, false)
    }
    for (const id of [withHistory, without]) await compacted(store, id, state)
    await historyBytes(server, withHistory)
    if (storage === 'leveldb') await /** @type {any} */ (server.backend.historyStore).guard.db.compactRange('!', '~')
    const loads = { history: createHistogram(), none: createHistogram() }
    // The first of each is not counted: it warms what both then read.
    for (let i = -1; i < LOAD_RUNS; i++) {
      // Which goes first alternates too.
      const pair = /** @type {const} */ ([['history', withHistory], ['none', without]])
      for (const [kind, id] of i % 2 === 0 ? pair : [...pair].reverse()) {
        const started = performance.now()
        const { updates } = await store.load(id)
        const ydoc = new Y.Doc()
        Y.transact(ydoc, () => { for (const update of updates) Y.applyUpdate(ydoc, update) })
        if (i >= 0) recordMs(loads[kind], performance.now() - started)
        if (ydoc.getText(TEXT_NAME).toString() !== text) throw new Error('incomplete load')
        ydoc.destroy()
      }
    }
    const loadWith = /** @type {import('../loadtest/histogram.js').LatencySummary} */ (summarize(loads.history))
    const loadWithout = /** @type {import('../loadtest/histogram.js').LatencySummary} */ (summarize(loads.none))
    return { storage, updates: typed.length, rawBytes, keyframedBytes, foldedBytes, at, overviewMs, loadWith, loadWithout, hours }
  } finally {
    await server.close()
    await rm(dir, { recursive: true, force: true })
  }
}

/**
 * Compacts the document into `state` until its log is gone: a compaction keeps what a move of the
 * update log writes meanwhile. @param {import('../server/storage/doc-store.js').DocStore} store
 * @param {string} id @param {Uint8Array} state
 */
async function compacted (store, id, state) {
  for (let i = 0; i < 10; i++) {
    const { updates, position } = await store.load(id)
    if (updates.length <= 1) return
    await new Promise(resolve => setTimeout(resolve, 200))
    await store.compact(id, async () => ({ snapshot: state, position }))
  }
  throw new Error('the document would not compact')
}

/**
 * The bytes of the document's history: LevelDB's keys and values as written (before its compression),
 * or Redis's MEMORY USAGE of each key (SAMPLES 0). Waits for LevelDB to take what the update log held.
 * @param {import('../server/app.js').TandemServer} server @param {string} id
 */
async function historyBytes (server, id) {
  const store = /** @type {any} */ (server.backend.historyStore)
  if (!store.level) return store.bytes(id)
  await new Promise(resolve => setTimeout(resolve, 300))
  let sum = 0
  for await (const [key, value] of store.level.iterator({ gt: `${id}!`, lt: `${id}!~` })) sum += key.length + value.byteLength
  return sum
}

/** @param {string[]} argv */
export async function main (argv) {
  let hours = 8
  let stores = ['leveldb', 'redis']
  for (let i = 0; i < argv.length; i += 2) {
    if (argv[i] === '--hours' && /^\d+$/.test(argv[i + 1])) hours = Number(argv[i + 1])
    else if (argv[i] === '--store' && ['leveldb', 'redis', 'both'].includes(argv[i + 1])) stores = argv[i + 1] === 'both' ? stores : [argv[i + 1]]
    else throw new Error(`bench history: unexpected ${JSON.stringify(argv[i])}. Usage: npm run bench -- history [--hours N] [--store leveldb|redis|both]`)
  }
  console.log(`node ${process.version}; ${EDITORS} editors x ${KEYS_PER_SECOND} keystrokes/s for an hour`)
  const mib = (/** @type {number} */ bytes) => `${(bytes / 1024 / 1024).toFixed(2)} MiB`
  for (const storage of stores) {
    const redisServer = storage === 'redis' ? await startRedisServer() : null
    try {
      const r = await measure(storage, { hours }, { redisUrl: redisServer?.url })
      console.log(`\n${storage}: ${r.updates} updates in the hour`)
      console.log(`  history bytes, every update kept: ${mib(r.rawBytes)}; with keyframes: ${mib(r.keyframedBytes)}; folded into minutes: ${mib(r.foldedBytes)}`)
      console.log(`  content?at= over ${AT_REQUESTS} times of the hour: median ${r.at.p50.toFixed(1)} ms, p90 ${r.at.p90.toFixed(1)} ms, p99 ${r.at.p99.toFixed(1)} ms`)
      console.log(`  /history of the hour, every update kept: ${r.overviewMs.toFixed(0)} ms`)
      console.log(`  load, ${r.hours} h of history: median ${r.loadWith.p50.toFixed(1)} ms; none: median ${r.loadWithout.p50.toFixed(1)} ms (${LOAD_RUNS} alternating runs each)`)
    } finally {
      await redisServer?.stop()
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main(process.argv.slice(2))
