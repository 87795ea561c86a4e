import { readFile } from 'node:fs/promises'
import { gunzipSync } from 'node:zlib'

// Replays an editing trace in the public "editing-traces" format: {startContent, endContent,
// txns: [{time, patches: [[pos, deleteCount, insertText], ...]}]}. Each edit is one transaction
// of the trace, its patches applied in order, so edit sizes and shapes (multi-cursor edits,
// refactors, pastes) are the recorded ones. Positions are relative to the editor's region.

/** @typedef {[number, number, string]} Patch */
/** @typedef {{ startContent: string, endContent: string, txns: { patches: Patch[] }[] }} Trace */

const GZIP_MAGIC = [0x1f, 0x8b]

/**
 * Reads and checks a trace file (gzipped or not).
 * @param {string} file
 * @returns {Promise<Trace>}
 */
export async function loadTrace (file) {
  let bytes = await readFile(file)
  if (bytes[0] === GZIP_MAGIC[0] && bytes[1] === GZIP_MAGIC[1]) bytes = gunzipSync(bytes)
  let trace
  try {
    trace = JSON.parse(bytes.toString('utf8'))
  } catch (err) {
    throw new Error(`${file}: not JSON (${/** @type {Error} */ (err).message})`)
  }
  const ok = typeof trace?.startContent === 'string' && typeof trace.endContent === 'string' &&
    Array.isArray(trace.txns) && trace.txns.length > 0 &&
    trace.txns.every((/** @type {any} */ txn) => Array.isArray(txn?.patches) && txn.patches.every(isPatch))
  if (!ok) throw new Error(`${file}: not an editing trace ({startContent, endContent, txns: [{patches: [[pos, del, ins]]}]})`)
  return { startContent: trace.startContent, endContent: trace.endContent, txns: trace.txns.map((/** @type {any} */ txn) => ({ patches: txn.patches })) }
}

/** @param {unknown} patch */
function isPatch (patch) {
  return Array.isArray(patch) && patch.length === 3 && Number.isInteger(patch[0]) && patch[0] >= 0 &&
    Number.isInteger(patch[1]) && patch[1] >= 0 && typeof patch[2] === 'string'
}

export class TraceEdits {
  done = false
  #next = 0

  /** @param {Trace} trace */
  constructor (trace) {
    this.trace = trace
  }

  /**
   * Applies the next transaction inside `region` (call inside a transaction); returns the cursor's index.
   * @param {import('yjs').Text} ytext
   * @param {import('./regions.js').Region} region
   */
  apply (ytext, region) {
    const { patches } = this.trace.txns[this.#next++]
    this.done = this.#next === this.trace.txns.length
    const start = region.start()
    let cursor = start
    for (const [pos, deleteCount, insert] of patches) {
      if (deleteCount > 0) ytext.delete(start + pos, deleteCount)
      if (insert !== '') ytext.insert(start + pos, insert)
      cursor = start + pos + insert.length
    }
    return cursor
  }
}
