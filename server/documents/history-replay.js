import * as Y from 'yjs'
import { AppError } from '../errors.js'
import { minuteEnd } from '../storage/history-store.js'
/** @import { HistoryStore, HistoryEntry, MinuteStep, HistoryState } from '../storage/history-store.js' */

// A document at a past time, rebuilt from its history: the newest keyframe (or the base) at or before
// that time, then the folded minutes and the updates stored after it, up to that time.

/**
 * @typedef {{ at: number, by: string | null, update: Uint8Array }} EntryStep one update as stored
 * @typedef {{ at: number, minute: MinuteStep }} MinuteStepAt a folded minute, at its end
 */

/**
 * Where a replay up to `at` starts, and what follows up to `at`, oldest first. HISTORY_GONE before the
 * oldest state history holds. @param {HistoryStore} store @param {string} docId @param {number} at
 * @param {number} [limit] of the steps that follow
 * @returns {Promise<{ start: HistoryState | null, steps: (EntryStep | MinuteStepAt)[] }>}
 */
export async function replayTo (store, docId, at, limit = Infinity) {
  const [base, keyframe] = await Promise.all([store.base(docId), store.keyframeAt(docId, at)])
  if (base && at < base.at) throw gone(base.at)
  const start = keyframe && (!base || keyframe.at > base.at) ? keyframe : base
  return { start, steps: await stepsBetween(store, docId, start?.at ?? -1, at, limit) }
}

/**
 * The folded minutes (all older than any entry left) then the entries, stored after `after` up to `upTo`.
 * @param {HistoryStore} store @param {string} docId @param {number} after @param {number} upTo @param {number} limit
 * @returns {Promise<(EntryStep | MinuteStepAt)[]>}
 */
export async function stepsBetween (store, docId, after, upTo, limit) {
  const minutes = await store.steps(docId, after, upTo, limit)
  const entries = minutes.length < limit ? await store.entries(docId, after, upTo, limit - minutes.length) : []
  return [...minutes.map(minute => ({ at: minute.end, minute })), ...entries]
}

/**
 * The document at `at`; the caller destroys it. @param {HistoryStore} store @param {string} docId @param {number} at
 */
export async function docAt (store, docId, at) {
  const { start, steps } = await replayTo(store, docId, at)
  return docOf(start, steps)
}

/**
 * Applied in one transaction, which ends (merging what it split) before anything is encoded from it.
 * @param {HistoryState | null} start @param {(EntryStep | MinuteStepAt)[]} steps
 */
export function docOf (start, steps) {
  const ydoc = new Y.Doc()
  Y.transact(ydoc, () => {
    if (start) Y.applyUpdate(ydoc, start.state)
    for (const step of steps) Y.applyUpdate(ydoc, updateOf(step))
  })
  return ydoc
}

/** The document as one Yjs update. @param {HistoryState | null} start @param {(EntryStep | MinuteStepAt)[]} steps */
export function stateOf (start, steps) {
  const ydoc = docOf(start, steps)
  try {
    return Y.encodeStateAsUpdate(ydoc)
  } finally {
    ydoc.destroy()
  }
}

/** @param {EntryStep | MinuteStepAt} step */
export const updateOf = step => 'minute' in step ? step.minute.update : step.update

/**
 * Characters an update adds to and removes from the text (a deletion counts the length it covers).
 * @param {Uint8Array} update
 */
export function changeOf (update) {
  const { structs, ds } = Y.decodeUpdate(update)
  let added = 0
  for (const struct of structs) {
    if (struct instanceof Y.Item && struct.content instanceof Y.ContentString) added += struct.length
  }
  let removed = 0
  for (const items of ds.clients.values()) for (const item of items) removed += item.len
  return { added, removed }
}

/**
 * Updates grouped into their minutes (`(end - 60 s, end]`), each merged into one with its summary.
 * @param {HistoryEntry[]} entries oldest first @returns {MinuteStep[]}
 */
export function foldMinutes (entries) {
  /** @type {Map<number, HistoryEntry[]>} */
  const byMinute = new Map()
  for (const entry of entries) {
    const end = minuteEnd(entry.at)
    const minute = byMinute.get(end)
    if (minute) minute.push(entry)
    else byMinute.set(end, [entry])
  }
  return [...byMinute].map(([end, minute]) => ({
    ...summaryOf(minute, end),
    update: Y.mergeUpdates(minute.map(entry => entry.update))
  }))
}

/**
 * @param {HistoryEntry[]} entries of one minute @param {number} end
 * @returns {import('../storage/history-store.js').MinuteSummary}
 */
export function summaryOf (entries, end) {
  const editors = new Set()
  let added = 0
  let removed = 0
  for (const entry of entries) {
    if (entry.by !== null) editors.add(entry.by)
    const change = changeOf(entry.update)
    added += change.added
    removed += change.removed
  }
  return { start: end - 60000, end, editors: [...editors].sort(), added, removed, updates: entries.length }
}

/** @param {number} retainedFrom */
export function gone (retainedFrom) {
  return new AppError('HISTORY_GONE', `history holds this session from ${new Date(retainedFrom).toISOString()} on`, { retainedFrom: new Date(retainedFrom).toISOString() })
}
