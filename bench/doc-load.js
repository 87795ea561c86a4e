// Time to load a document from the embedded store: a log of 10,000 single-keystroke updates as
// written by typing, against the same history compacted into one snapshot. Median of 5 loads each,
// through the server's own DocRegistry (read, merge, apply).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as Y from 'yjs'
import { createServer } from '../server/app.js'
import { loadConfig } from '../server/config.js'
import { TEXT_NAME } from '../isomorphic/events.js'
import { createHistogram, recordMs, summarize } from '../loadtest/histogram.js'

const STORED_UPDATES = 10000
const RUNS = 5

/**
 * @param {import('../server/app.js').TandemServer} server
 * @param {string} label
 * @param {(id: string) => Promise<void>} store writes the stored form under a fresh id per run (an
 *   unload compacts what it loaded, and LevelDB tombstones would slow a reused range)
 */
async function timeLoads (server, label, store) {
  const loads = createHistogram()
  for (let i = 0; i < RUNS; i++) {
    const id = `${label}${i}`
    await store(id)
    const started = performance.now()
    const doc = await server.registry.open(id)
    recordMs(loads, performance.now() - started)
    if (doc.ydoc.getText(TEXT_NAME).length !== STORED_UPDATES) throw new Error('incomplete load')
    await server.registry.unload(id)
  }
  return /** @type {import('../loadtest/histogram.js').LatencySummary} */ (summarize(loads))
}

export async function run () {
  const dir = await mkdtemp(join(tmpdir(), 'tandem-bench-'))
  // A huge compaction threshold keeps the raw log as written, so the first loads read all 10,000.
  const config = loadConfig({}, { dataDir: dir, logLevel: 'silent', compactAfterUpdates: 10 * STORED_UPDATES })
  const server = await createServer(config)
  try {
    const typist = new Y.Doc()
    const text = typist.getText(TEXT_NAME)
    /** @type {Uint8Array[]} */
    const updates = []
    typist.on('update', (/** @type {Uint8Array} */ update) => updates.push(update))
    for (let i = 0; i < STORED_UPDATES; i++) text.insert(i, 'abcdefghij'[i % 10])
    const store = server.registry.store
    const log = await timeLoads(server, 'log', async (id) => {
      for (let i = 0; i < updates.length; i += 500) await store.append(id, updates.slice(i, i + 500))
    })
    const snapshot = await timeLoads(server, 'snapshot', async (id) => {
      await store.compact(id, async () => ({ snapshot: Y.encodeStateAsUpdate(typist), position: null }))
    })
    console.log(`Load, ${STORED_UPDATES} stored updates as a log: median ${log.p50.toFixed(1)} ms (max ${log.max.toFixed(1)})`)
    console.log(`Load, the same document compacted to a snapshot: median ${snapshot.p50.toFixed(1)} ms (max ${snapshot.max.toFixed(1)})`)
    return { logMedianMs: log.p50, snapshotMedianMs: snapshot.p50 }
  } finally {
    await server.close()
    await rm(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run()
