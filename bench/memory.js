// Memory a server process spends per connected editor and per loaded document: RSS of a real server
// process (from /proc) before and after connecting idle editors that have joined their documents,
// then after loading documents that nobody edits. Idle means connected, joined, cursor announced,
// not typing. Median of 3 samples taken 1 s apart, after a settle. The server runs with Tandem's
// Node.js options (server/node-options.js), as `npm start` runs it. The editors join in two halves:
// the second half's growth is what one more editor costs once V8's young generation has grown to
// its size (a step the first editors pay for; without the options, Node 26 grows it to 64 MB on a
// large machine).
// How much of the growth is that young generation is read from the server's /metrics (prom-client's
// heap space sizes), so the figure per editor can be read with and without V8's one-off resize.
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as Y from 'yjs'
import { encodeAwarenessUpdate, Awareness } from 'y-protocols/awareness'
import { TandemApi } from '../loadtest/api.js'
import { samplesOf, sum } from '../loadtest/prometheus.js'
import { startServerProcess } from '../loadtest/spawn.js'
import { joinEditor } from './joined-editor.js'

const EDITORS = Number(process.env.EDITORS ?? 1000)
const PER_ROOM = 5
const DOCUMENTS = Number(process.env.DOCUMENTS ?? 500)
const SEED = 'function example () {\n  return 42\n}\n'.repeat(25)
const SAMPLES = 3
/** prom-client's default metric of each V8 heap space's reserved size. */
const HEAP_SPACE_SIZE = 'nodejs_heap_space_size_total_bytes'

/** @param {number} pid RSS in bytes */
async function rss (pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1]) * 1024
}

/** The median of SAMPLES readings of the RSS, 1 s apart, after a settle. @param {number} pid */
async function settledRss (pid) {
  await new Promise(resolve => setTimeout(resolve, 2000))
  const samples = []
  for (let i = 0; i < SAMPLES; i++) {
    samples.push(await rss(pid))
    await new Promise(resolve => setTimeout(resolve, 1000))
  }
  return samples.sort((a, b) => a - b)[SAMPLES >> 1]
}

/**
 * Bytes V8 has reserved for its young generation (its `new` space; large young objects apart) in the
 * server process.
 * @param {TandemApi} api
 */
async function youngGeneration (api) {
  const samples = samplesOf(await api.metrics() ?? [])
  const where = { space: 'new' }
  if (!samples.some(sample => sample.name === HEAP_SPACE_SIZE && sample.labels.space === where.space)) {
    throw new Error(`the server's /metrics has no ${HEAP_SPACE_SIZE}{space="new"}`)
  }
  return sum(samples, HEAP_SPACE_SIZE, where)
}

export async function run () {
  const dir = await mkdtemp(join(tmpdir(), 'tandem-bench-'))
  const { url, server } = await startServerProcess({
    DATA_DIR: dir, LOG_LEVEL: 'info', MAX_CONNECTIONS_PER_IP: '0', CONNECTIONS_PER_MINUTE: '0', JOINS_PER_MINUTE: '0', REST_PER_MINUTE: '0'
  }).catch(async (err) => { await rm(dir, { recursive: true, force: true }); throw err })
  const pid = /** @type {number} */ (server.pid)
  const api = new TandemApi(url, null)
  /** @type {Awaited<ReturnType<typeof joinEditor>>[]} */
  const editors = []
  try {
    const baseline = await settledRss(pid)
    const youngAtStart = await youngGeneration(api)
    const rooms = EDITORS / PER_ROOM
    const firstRooms = Math.floor(rooms / 2)
    let withHalf = 0
    for (let room = 0; room < rooms; room++) {
      if (room === firstRooms) withHalf = await settledRss(pid)
      const { id } = await api.createSession({ name: 'bench', content: SEED })
      for (let i = 0; i < PER_ROOM; i++) {
        const editor = await joinEditor(url, id)
        editors.push(editor)
        const awareness = new Awareness(new Y.Doc())
        awareness.setLocalState({ user: { name: `editor ${editors.length}`, color: '#268bd2' }, cursor: { anchor: 1, head: 1 } })
        editor.sendAwareness(encodeAwarenessUpdate(awareness, [awareness.clientID]))
        awareness.destroy()
      }
    }
    const withEditors = await settledRss(pid)
    const youngWithEditors = await youngGeneration(api)
    // Documents without editors: loaded by a content read, kept until DOC_IDLE_MS (30 s) passes.
    for (let i = 0; i < DOCUMENTS; i++) {
      const { id } = await api.createSession({ name: 'bench', content: SEED })
      await api.content(id)
    }
    const withDocuments = await settledRss(pid)
    const perDocument = (withDocuments - withEditors) / DOCUMENTS
    const perEditor = (withEditors - baseline - rooms * perDocument) / EDITORS
    const furtherEditors = EDITORS - firstRooms * PER_ROOM
    const perFurtherEditor = (withEditors - withHalf - (rooms - firstRooms) * perDocument) / furtherEditors
    const youngPerEditor = (youngWithEditors - youngAtStart) / EDITORS
    const kb = (/** @type {number} */ bytes) => (bytes / 1024).toFixed(1)
    console.log(`Memory (RSS of the server process): ${kb(baseline)} KiB at start; ${EDITORS} idle editors in rooms of ${PER_ROOM}: +${kb(withEditors - baseline)} KiB ` +
      `(the first ${firstRooms * PER_ROOM}: +${kb(withHalf - baseline)} KiB); ` +
      `then ${DOCUMENTS} loaded documents without editors (${SEED.length}-character text each): +${kb(withDocuments - withEditors)} KiB`)
    console.log(`Memory per idle connected editor: ${kb(perEditor)} KiB (its document's share excluded), ${kb(perFurtherEditor)} KiB for each of the ` +
      `last ${furtherEditors}; per loaded document: ${kb(perDocument)} KiB`)
    console.log(`Of the change with the editors, V8's young generation: ${kb(youngPerEditor)} KiB per editor ` +
      `(${(youngAtStart / 2 ** 20).toFixed(1)} → ${(youngWithEditors / 2 ** 20).toFixed(1)} MiB: V8 sizes it to the allocation rate, up to a ceiling, not to the editors); ` +
      `per idle editor without it: ${kb(perEditor - youngPerEditor)} KiB`)
    return { perEditorBytes: perEditor, perFurtherEditorBytes: perFurtherEditor, perDocumentBytes: perDocument, youngGenerationPerEditorBytes: youngPerEditor }
  } finally {
    for (const editor of editors) editor.close()
    await server.stop('SIGTERM')
    await rm(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run()
