// CPU per update of the server's own update path, in one process, without sockets: what
// `acceptUpdate` does to an editor's update (check, apply, the relay's encoding, the write to the
// update log and its move to LevelDB) through a real server's DocRegistry and embedded store. Rooms of
// 5 typists, as the peers bench's rooms of 5; the updates of a turn of the event loop go together, as
// on a server under load. What the transport adds (Engine.IO, Socket.IO, the writes to each editor) is
// what `npm run peers` measures. A change to the update path shows here at about ten times the share
// it has of a server's CPU per delivery (the update path is about a tenth of it, docs/PEERS.md), so it
// can be measured here first; run both builds in turn, as the figure spreads by about ±10 % between
// runs.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as Y from 'yjs'
import { createServer } from '../server/app.js'
import { loadConfig } from '../server/config.js'
import { acceptUpdate } from '../server/documents/accept-update.js'
import { TEXT_NAME } from '../isomorphic/events.js'
import { medianOf } from '../loadtest/runs.js'

/** Documents per round: 600 editors in rooms of 5. */
const DOCUMENTS = Number(process.env.DOCUMENTS ?? 120)
/** Updates per document per round: past the compaction threshold (500), so each document compacts once. */
const UPDATES = Number(process.env.UPDATES ?? 600)
const ROUNDS = Number(process.env.ROUNDS ?? 5)
const TYPISTS = 5
const TYPED = 'abcdefgh'
/** Updates taken in one turn of the event loop: about what the server took per turn at 600 editors in rooms of 5 (3,100 reads and 825 polls a second). */
const UPDATES_PER_TURN = 4

/**
 * Each document's updates, typed by its typists in turn: 8 characters at the end of what each one
 * typed so far, in its own copy (the server has everything each update builds on).
 * @param {Y.Doc} seed the document as stored
 */
function typedUpdates (seed) {
  const typists = Array.from({ length: TYPISTS }, () => {
    const doc = new Y.Doc()
    Y.applyUpdate(doc, Y.encodeStateAsUpdate(seed))
    return doc
  })
  /** @type {Uint8Array[]} */
  const updates = []
  for (const typist of typists) typist.on('update', (/** @type {Uint8Array} */ update) => updates.push(update))
  for (let i = 0; i < UPDATES; i++) {
    const text = typists[i % TYPISTS].getText(TEXT_NAME)
    text.insert(text.length, TYPED)
  }
  return updates
}

/**
 * One round over fresh documents; the CPU of the whole process (LevelDB's threads included) per update.
 * @param {import('../server/app.js').TandemServer} server
 * @param {import('../server/config.js').Config} config
 * @param {number} round
 */
async function timeRound (server, config, round) {
  const docs = []
  const updates = []
  for (let d = 0; d < DOCUMENTS; d++) {
    const doc = await server.registry.open(`round${round}-doc${d}`)
    docs.push(doc)
    updates.push(typedUpdates(doc.ydoc))
  }
  const acceptDeps = { config }
  const from = { sender: /** @type {any} */ ({}) }
  const total = DOCUMENTS * UPDATES
  const started = process.cpuUsage()
  for (let next = 0; next < total; next += UPDATES_PER_TURN) {
    const turn = []
    for (let k = next; k < Math.min(total, next + UPDATES_PER_TURN); k++) {
      const doc = docs[k % DOCUMENTS]
      const update = updates[k % DOCUMENTS][Math.floor(k / DOCUMENTS)]
      turn.push(acceptUpdate(doc, update, from, acceptDeps, server.logger))
    }
    await Promise.all(turn)
  }
  const used = process.cpuUsage(started)
  // Read back from storage: every update the path took is there.
  for (const { id } of docs) {
    await server.registry.unload(id)
    const stored = await server.registry.open(id)
    if (stored.ydoc.getText(TEXT_NAME).length !== UPDATES * TYPED.length) throw new Error(`${id} lacks updates it acknowledged`)
    await server.registry.unload(id)
  }
  return (used.user + used.system) / total
}

export async function run () {
  const dir = await mkdtemp(join(tmpdir(), 'tandem-bench-'))
  // HISTORY_RETENTION=30d measures the path with history kept.
  const config = loadConfig({ HISTORY_RETENTION: process.env.HISTORY_RETENTION }, { dataDir: dir, logLevel: 'silent' })
  const server = await createServer(config)
  try {
    // A first round, not counted, warms the JIT up.
    await timeRound(server, config, -1)
    const perUpdate = []
    for (let round = 0; round < ROUNDS; round++) perUpdate.push(await timeRound(server, config, round))
    const median = /** @type {number} */ (medianOf(perUpdate))
    console.log(`Update path (check, apply, encode, store), ${DOCUMENTS} documents of ${TYPISTS} typists, ${UPDATES_PER_TURN} updates a turn: median ${median.toFixed(2)} µs of CPU per update over ${ROUNDS} rounds of ${DOCUMENTS * UPDATES} after one to warm up (${Math.min(...perUpdate).toFixed(2)}–${Math.max(...perUpdate).toFixed(2)})`)
    return { medianUs: median, rounds: perUpdate }
  } finally {
    await server.close()
    await rm(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run()
