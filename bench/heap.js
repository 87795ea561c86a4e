// The live JavaScript heap a server process spends per idle editor, and on what. RSS (memory.js)
// also holds V8's young generation, which grows with the allocation rate rather than with the
// editors, and native memory; a heap snapshot holds only what is reachable (V8 collects all garbage
// before it writes one), so the difference between two snapshots is what the editors in between
// keep alive. The server writes a snapshot on SIGUSR2 (`--heapsnapshot-signal`) after EDITORS idle
// editors have joined in rooms of 5, and again after as many more: the second half's growth per
// editor, by the kind of object that grew (constructor names, or V8's kinds in brackets). The first
// half is not counted: it also pays for code compiled on first use.
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TandemApi } from '../loadtest/api.js'
import { startServerProcess } from '../loadtest/spawn.js'
import { joinEditor } from './joined-editor.js'

const EDITORS = Number(process.env.EDITORS ?? 500)
const PER_ROOM = 5
const SEED = 'function example () {\n  return 42\n}\n'.repeat(25)
/** Kinds of object shown, largest growth first. */
const SHOWN = 8
const SNAPSHOT_TIMEOUT_MS = 60_000

/**
 * Bytes of every object in a heap snapshot, in all and by kind.
 * @param {string} path
 */
async function liveHeap (path) {
  const { snapshot: { meta }, nodes, strings } = JSON.parse(await readFile(path, 'utf8'))
  const fields = meta.node_fields.length
  const typeAt = meta.node_fields.indexOf('type')
  const nameAt = meta.node_fields.indexOf('name')
  const sizeAt = meta.node_fields.indexOf('self_size')
  const types = meta.node_types[typeAt]
  /** @type {Map<string, number>} */
  const byKind = new Map()
  let total = 0
  for (let i = 0; i < nodes.length; i += fields) {
    const type = types[nodes[i + typeAt]]
    const kind = type === 'object' ? strings[nodes[i + nameAt]] : type === 'closure' ? '(closure)' : `(${type})`
    const size = nodes[i + sizeAt]
    total += size
    byKind.set(kind, (byKind.get(kind) ?? 0) + size)
  }
  return { total, byKind }
}

/**
 * Signals the server to write a heap snapshot into `dir` and reads it once written whole (its size
 * stays the same for a second); the file is removed.
 * @param {{ pid: number | null }} server
 * @param {string} dir
 */
async function snapshotOf (server, dir) {
  process.kill(/** @type {number} */ (server.pid), 'SIGUSR2')
  const deadline = Date.now() + SNAPSHOT_TIMEOUT_MS
  let lastSize = -1
  while (Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 1000))
    const [file] = (await readdir(dir)).filter(name => name.endsWith('.heapsnapshot'))
    if (!file) continue
    const path = join(dir, file)
    const { size } = await stat(path)
    if (size > 0 && size === lastSize) {
      const heap = await liveHeap(path)
      await rm(path)
      return heap
    }
    lastSize = size
  }
  throw new Error(`no heap snapshot from the server within ${SNAPSHOT_TIMEOUT_MS / 1000} s`)
}

export async function run () {
  const dir = await mkdtemp(join(tmpdir(), 'tandem-heap-'))
  const snapshots = join(dir, 'snapshots')
  await mkdir(snapshots)
  const nodeOptions = `${process.env.NODE_OPTIONS ?? ''} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshots}`.trim()
  const { url, server } = await startServerProcess({
    DATA_DIR: join(dir, 'data'), NODE_OPTIONS: nodeOptions, LOG_LEVEL: 'warn', MAX_CONNECTIONS_PER_IP: '0', CONNECTIONS_PER_MINUTE: '0', JOINS_PER_MINUTE: '0', REST_PER_MINUTE: '0'
  }).catch(async (err) => { await rm(dir, { recursive: true, force: true }); throw err })
  const api = new TandemApi(url, null)
  /** @type {Awaited<ReturnType<typeof joinEditor>>[]} */
  const editors = []
  const joinRooms = async (/** @type {number} */ count) => {
    for (let room = 0; room < count / PER_ROOM; room++) {
      const { id } = await api.createSession({ name: 'bench', content: SEED })
      for (let i = 0; i < PER_ROOM; i++) editors.push(await joinEditor(url, id))
    }
  }
  try {
    await joinRooms(EDITORS)
    const before = await snapshotOf(server, snapshots)
    const editorsBefore = editors.length
    await joinRooms(EDITORS)
    const after = await snapshotOf(server, snapshots)
    const added = editors.length - editorsBefore
    const perEditor = (after.total - before.total) / added
    const growth = [...after.byKind]
      .map(([kind, bytes]) => ({ kind, bytes: (bytes - (before.byKind.get(kind) ?? 0)) / added }))
      .sort((a, b) => b.bytes - a.bytes)
      .slice(0, SHOWN)
    const kb = (/** @type {number} */ bytes) => (bytes / 1024).toFixed(2)
    console.log(`Live heap per idle editor (heap snapshots at ${editorsBefore} and ${editors.length} editors in rooms of ${PER_ROOM}, each room's document included): ${kb(perEditor)} KiB; ` +
      `largest kinds: ${growth.map(({ kind, bytes }) => `${kind} ${Math.round(bytes)} B`).join(', ')}`)
    return { perEditorBytes: perEditor, growth }
  } finally {
    for (const editor of editors) editor.close()
    await server.stop('SIGTERM')
    await rm(dir, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await run()
