import { performance } from 'node:perf_hooks'
import { parentPort, workerData } from 'node:worker_threads'
import { now, sleepUntil } from './clock.js'
import { LoadEditor } from './editor.js'
import { EditorStats } from './editor-stats.js'
import { SyntheticEdits } from './edits/synthetic.js'
import { TraceEdits, loadTrace } from './edits/trace.js'
import { SendLog } from './send-log.js'
import { processOfEditor } from './spread.js'

// A load-generator thread: runs its share of a level's editors and answers the main thread's
// requests (pool.js). Every request carries an `id` that its reply echoes.

const PROGRESS_INTERVAL_MS = 1000

/**
 * @typedef {object} WorkerSetup
 * @property {number} worker this thread's number
 * @property {string} protocolModule URL of the module whose `protocol` the editors speak (protocols/index.js)
 * @property {string[]} urls the server's processes: an editor connects to the one its placement gives (spread.js)
 * @property {import('./spread.js').Placement} placement
 * @property {string | null} token
 * @property {number} rate
 * @property {number} awarenessRate
 * @property {number} ackTimeoutMs
 * @property {number} payload
 * @property {string | null} trace file to replay
 * @property {number} clientBase
 * @property {number} editorCount
 * @property {'all' | 'sample' | 'none'} apply which editors apply what they receive: all, the first of each room (slot 0), or none
 * @property {import('./send-log.js').SendLogBuffers} sendLog
 */

/** @typedef {{ index: number, room: number, slot: number, slots: number }} Assignment */
/** @typedef {{ id: string, seed: Uint8Array | null, token: string | null }} Room see target.js */

const setup = /** @type {WorkerSetup} */ (workerData)
const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort)
/** @type {import('./protocols/index.js').Protocol} */
const protocol = (await import(setup.protocolModule)).protocol
const sendLog = new SendLog(setup.sendLog)
const stats = new EditorStats()
const trace = setup.trace ? await loadTrace(setup.trace) : null
/** @type {LoadEditor[]} */
let editors = []
/** @type {NodeJS.Timeout | undefined} */
let progressTimer
/** @type {import('node:perf_hooks').EventLoopUtilization | undefined} */
let eluAtStart
let utilization = 0

const handlers = {
  /** Connects and joins every editor, each at `at` plus a random share of `rampMs`. */
  async join (/** @type {{ rooms: Room[], editors: Assignment[], at: number, rampMs: number }} */ { rooms, editors: assigned, at, rampMs }) {
    editors = assigned.map(({ index, room, slot, slots }) => new LoadEditor({
      index,
      protocol,
      doc: rooms[room].id,
      seed: rooms[room].seed,
      slot,
      slots,
      url: setup.urls[processOfEditor({ room, slot }, setup.urls.length, setup.placement)],
      token: rooms[room].token ?? setup.token,
      clientBase: setup.clientBase,
      editorCount: setup.editorCount,
      ackTimeoutMs: setup.ackTimeoutMs,
      rate: setup.rate,
      awarenessRate: setup.awarenessRate,
      applyRemote: setup.apply === 'all' || (setup.apply === 'sample' && slot === 0),
      source: trace ? new TraceEdits(trace) : new SyntheticEdits({ payload: setup.payload, seed: index }),
      sendLog,
      stats
    }))
    /** @type {Record<string, number>} */
    const failures = {}
    await Promise.all(editors.map(async (editor) => {
      await sleepUntil(at + Math.random() * rampMs)
      await editor.join().catch((/** @type {Error} */ err) => {
        failures[err.message] = (failures[err.message] ?? 0) + 1
      })
    }))
    return { joined: editors.filter(editor => editor.joined).map(editor => editor.config.index), failures }
  },

  /** Makes up to `edits` of each editor's edits ahead, where it can (LoadEditor.prepare). */
  prepare (/** @type {{ edits: number }} */ { edits }) {
    for (const editor of editors) editor.prepare(edits)
    return {}
  },

  /** @param {{ startAt: number, measureFrom: number, stopAt: number }} schedule */
  start (schedule) {
    for (const editor of editors) editor.start(schedule)
    setTimeout(() => { eluAtStart = performance.eventLoopUtilization() }, Math.max(0, schedule.measureFrom - now()))
    progressTimer = setInterval(reportProgress, PROGRESS_INTERVAL_MS)
    return {}
  },

  /** Stops editing and waits for every outstanding ACK (each bounded by the ACK timeout). */
  async stop () {
    if (eluAtStart) utilization = performance.eventLoopUtilization(eluAtStart).utilization
    await Promise.all(editors.map(editor => editor.stop()))
    clearInterval(progressTimer)
    return { sent: editors.map(editor => ({ index: editor.config.index, sent: editor.sentInWindow })) }
  },

  received () {
    return { received: stats.broadcastReceived }
  },

  digests () {
    return { digests: editors.filter(editor => editor.joined && editor.config.applyRemote).map(editor => ({ index: editor.config.index, digest: editor.digest() })) }
  },

  collect () {
    const replayed = editors.map(editor => editor.config.source instanceof TraceEdits ? editor.editsSent : 0)
    return {
      ...stats.toMessage(),
      eventLoopUtilization: utilization,
      traceFinished: editors.filter(editor => editor.joined && editor.outOfEdits).length,
      traceReplayed: replayed.reduce((a, b) => a + b, 0)
    }
  },

  close () {
    clearInterval(progressTimer)
    for (const editor of editors) editor.close()
    return {}
  }
}

function reportProgress () {
  const finished = editors.every(editor => !editor.joined || editor.finished)
  port.postMessage({ type: 'progress', worker: setup.worker, recent: stats.takeRecent(), finished })
}

port.on('message', async (/** @type {{ id: number, type: keyof typeof handlers }} */ message) => {
  try {
    const result = await handlers[message.type](/** @type {any} */ (message))
    port.postMessage({ id: message.id, result })
  } catch (err) {
    port.postMessage({ id: message.id, error: /** @type {Error} */ (err).stack ?? String(err) })
  }
})
