// A document's history, one interface per backend beside its DocStore. Entries (each acknowledged
// update, when it was stored and by whom) are written by `DocStore.append` in the same durable write
// as the update; everything else here is written by the history's compaction and by checkpoints.
// Times are server clock ms. A minute is `(start, end]`: an update stored at `end` is in it.

/**
 * @typedef {{ at: number, by: string | null, update: Uint8Array }} HistoryEntry
 * @typedef {{ start: number, end: number, editors: string[], added: number, removed: number, updates: number }} MinuteSummary
 * @typedef {MinuteSummary & { update: Uint8Array }} MinuteStep a folded minute: its updates merged into one
 * @typedef {{ at: number, state: Uint8Array }} HistoryState the whole document at `at`
 * @typedef {{ name: string, at: number, by: string | null, revision: string }} Checkpoint
 */

/**
 * @typedef {object} Fold one change of a compaction, applied at once
 * @property {number} [foldedUpTo] entries stored at or before this are dropped (now in `steps`)
 * @property {MinuteStep[]} [steps] new folded minutes
 * @property {HistoryState[]} [keyframes] new states to start a replay from
 * @property {number[]} [droppedKeyframes] the times of keyframes no longer needed
 * @property {HistoryState} [base] the new oldest state: everything at or before its time is dropped
 */

/**
 * @typedef {object} HistoryStore
 * @property {(docId: string, after: number, upTo: number, limit: number) => Promise<HistoryEntry[]>} entries
 *   stored after `after`, up to `upTo` (included), oldest first
 * @property {(docId: string, after: number, upTo: number, limit: number) => Promise<MinuteStep[]>} steps
 *   folded minutes ending after `after`, up to `upTo`, oldest first
 * @property {(docId: string, at: number) => Promise<HistoryState | null>} keyframeAt the newest keyframe at or before `at`
 * @property {(docId: string, after: number, upTo: number) => Promise<number[]>} keyframeTimes oldest first
 * @property {(docId: string) => Promise<HistoryState | null>} base the oldest state history holds, once older ones were dropped
 * @property {(docId: string) => Promise<number>} bytes what the document's history takes, roughly
 * @property {(docId: string, fold: Fold) => Promise<void>} fold
 * @property {(docId: string, checkpoint: Checkpoint, state: Uint8Array) => Promise<boolean>} addCheckpoint false if the name is taken
 * @property {(docId: string, name: string) => Promise<{ checkpoint: Checkpoint, state: Uint8Array } | null>} checkpoint
 * @property {(docId: string) => Promise<Checkpoint[]>} checkpoints oldest first
 */

/** A minute's summary then its merged update. @param {MinuteStep} step @returns {Buffer} */
export function encodeStep ({ update, ...summary }) {
  return withJson(summary, update)
}

/** @param {Uint8Array} bytes @returns {MinuteStep} */
export function decodeStep (bytes) {
  const { json, rest } = splitJson(bytes)
  return { ...json, update: rest }
}

/** @param {Checkpoint} checkpoint @param {Uint8Array} state */
export function encodeCheckpoint (checkpoint, state) {
  return withJson(checkpoint, state)
}

/** @param {Uint8Array} bytes @returns {{ checkpoint: Checkpoint, state: Uint8Array }} */
export function decodeCheckpoint (bytes) {
  const { json, rest } = splitJson(bytes)
  return { checkpoint: json, state: rest }
}

/** The end of the minute an update stored at `at` belongs to. @param {number} at */
export const minuteEnd = at => Math.ceil(at / 60000) * 60000

/** A 4-byte length, JSON, then bytes. @param {object} value @param {Uint8Array} bytes */
function withJson (value, bytes) {
  const json = Buffer.from(JSON.stringify(value), 'utf8')
  const out = Buffer.allocUnsafe(4 + json.length + bytes.byteLength)
  out.writeUInt32LE(json.length, 0)
  json.copy(out, 4)
  out.set(bytes, 4 + json.length)
  return out
}

/** @param {Uint8Array} bytes @returns {{ json: any, rest: Uint8Array }} */
function splitJson (bytes) {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const end = 4 + buffer.readUInt32LE(0)
  return { json: JSON.parse(buffer.toString('utf8', 4, end)), rest: new Uint8Array(buffer.subarray(end)) }
}
