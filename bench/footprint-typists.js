import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import { mapLimit } from '../loadtest/api.js'
import { joinEditor } from './joined-editor.js'

// The editors of the Redis footprint bench, in a worker thread of their own so that they and the
// server (on the main thread) each have a core: one editor per document joins with its token, types
// its text at the end of the document, and leaves once every update is acknowledged.

// Editors typing at once, and updates each keeps in flight before awaiting their ACKs: enough to keep
// the server busy without an ACK waiting past the editor's timeout.
const EDITORS_AT_ONCE = 16
const IN_FLIGHT = 8

/** @typedef {{ doc: string, token: string, text: string }} Job one editor's document, join token and text */

/**
 * Types every job's text into its document from a worker thread; resolves once all are done.
 * @param {string} url @param {Job[]} jobs @param {number} updateChars characters per update
 */
export function typeInWorker (url, jobs, updateChars) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { url, jobs, updateChars } })
    /** @type {{ error: string | null } | null} */
    let result = null
    // A socket.io-client may keep its thread alive after closing: the answer ends the worker.
    worker.once('message', (/** @type {{ error: string | null }} */ message) => {
      result = message
      worker.terminate()
    })
    worker.once('error', reject)
    worker.once('exit', code => {
      if (result === null) reject(new Error(`the editors' worker exited with code ${code} before it answered`))
      else if (result.error !== null) reject(new Error(`the editors failed: ${result.error}`))
      else resolve(undefined)
    })
  })
}

/**
 * One editor: joins, types `text` at the end of the document in updates of `updateChars`, at most
 * IN_FLIGHT unacknowledged, and leaves.
 * @param {string} url @param {Job} job @param {number} updateChars
 */
async function type (url, { doc, token, text }, updateChars) {
  const editor = await joinEditor(url, doc, token)
  try {
    for (let at = 0; at < text.length;) {
      /** @type {Promise<import('../loadtest/protocols/index.js').Ack>[]} */
      const acks = []
      for (let i = 0; i < IN_FLIGHT && at < text.length; i++, at += updateChars) {
        acks.push(editor.insert(editor.text.length, text.slice(at, at + updateChars)))
      }
      for (const ack of await Promise.all(acks)) {
        if (!ack.ok) throw new Error(`an update to ${doc} was refused: ${ack.code}`)
      }
    }
  } finally {
    editor.close()
  }
}

if (!isMainThread && parentPort) {
  const { url, jobs, updateChars } = /** @type {{ url: string, jobs: Job[], updateChars: number }} */ (workerData)
  const port = parentPort
  mapLimit(jobs, EDITORS_AT_ONCE, job => type(url, job, updateChars)).then(
    () => port.postMessage({ error: null }),
    (/** @type {Error} */ err) => port.postMessage({ error: err.stack ?? String(err) }))
}
