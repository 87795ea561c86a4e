import * as Y from 'yjs'
import { minuteEnd } from '../storage/history-store.js'
import { foldMinutes, replayTo, stateOf, stepsBetween, updateOf } from './history-replay.js'
/** @import { HistoryStore, HistoryState } from '../storage/history-store.js' */

// History's own compaction, run after the document's (never on the ACK path). In order, each step
// one write of its own, so a crash between leaves history whole: updates older than the keystroke
// window are folded into one step per minute, and the keyframes among them thinned to the last of
// each hour; a keyframe (the whole document) is kept every KEYFRAME_EVERY steps, so that rebuilding
// any time replays at most that many (or an hour of minutes); what is older than
// retention becomes the base; past the size cap, the base moves on a keyframe at a time.

/** Steps (updates or folded minutes) between two keyframes. */
export const KEYFRAME_EVERY = 1000
const HOUR_MS = 3600 * 1000
/** Keyframes dropped at most per compaction for the size cap: the rest waits for the next one. */
const MAX_CAP_STEPS = 8

/**
 * @typedef {object} HistoryLimits
 * @property {number} retentionMs @property {number} keystrokesMs @property {number} maxBytes
 */

/**
 * @param {HistoryStore} store @param {string} docId @param {number} now server clock, ms
 * @param {HistoryLimits} limits
 */
export async function compactHistory (store, docId, now, { retentionMs, keystrokesMs, maxBytes }) {
  const foldUpTo = minuteEnd(now - keystrokesMs) - 60000
  const old = await store.entries(docId, -1, foldUpTo, Infinity)
  if (old.length > 0) {
    /** @type {Map<number, number>} the last keyframe of each hour */
    const lastOfHour = new Map()
    const times = await store.keyframeTimes(docId, -1, foldUpTo)
    for (const at of times) lastOfHour.set(Math.floor(at / HOUR_MS), at)
    const droppedKeyframes = times.filter(at => lastOfHour.get(Math.floor(at / HOUR_MS)) !== at)
    await store.fold(docId, { foldedUpTo: foldUpTo, steps: foldMinutes(old), droppedKeyframes })
  }
  await addKeyframes(store, docId, now)
  const base = await store.base(docId)
  const dropUpTo = minuteEnd(now - retentionMs) - 60000
  if (dropUpTo > (base?.at ?? -1) && (await stepsBetween(store, docId, base?.at ?? -1, dropUpTo, 1)).length > 0) {
    const { start, steps } = await replayTo(store, docId, dropUpTo)
    await store.fold(docId, { base: { at: dropUpTo, state: stateOf(start, steps) } })
  }
  for (let i = 0; i < MAX_CAP_STEPS && await store.bytes(docId) > maxBytes; i++) {
    const next = await nextKeyframe(store, docId)
    if (!next) break
    await store.fold(docId, { base: next })
  }
}

/**
 * Walks from the newest keyframe (or the base) to now, keeping the state every KEYFRAME_EVERY steps;
 * only where the next step is later, so that a keyframe holds everything stored at its time.
 * @param {HistoryStore} store @param {string} docId @param {number} now
 */
async function addKeyframes (store, docId, now) {
  // Most compactions find too few steps since the last keyframe, and read no more than that.
  const { start, steps: first } = await replayTo(store, docId, now, KEYFRAME_EVERY + 1)
  if (first.length <= KEYFRAME_EVERY) return
  const steps = await stepsBetween(store, docId, start?.at ?? -1, now, Infinity)
  /** @type {HistoryState[]} */
  const keyframes = []
  const ydoc = new Y.Doc()
  try {
    if (start) Y.applyUpdate(ydoc, start.state)
    let from = 0
    // A transaction per keyframe: each ends, merging what it split, before its keyframe is encoded.
    while (from < steps.length) {
      let to = Math.min(from + KEYFRAME_EVERY, steps.length)
      // Never between two steps of one millisecond.
      while (to < steps.length && steps[to].at === steps[to - 1].at) to++
      Y.transact(ydoc, () => { for (let i = from; i < to; i++) Y.applyUpdate(ydoc, updateOf(steps[i])) })
      if (to - from >= KEYFRAME_EVERY && to < steps.length) keyframes.push({ at: steps[to - 1].at, state: Y.encodeStateAsUpdate(ydoc) })
      from = to
    }
  } finally {
    ydoc.destroy()
  }
  if (keyframes.length > 0) await store.fold(docId, { keyframes })
}

/**
 * The newest keyframe within KEYFRAME_EVERY steps after the base; without one, the state at the last
 * of those steps. @param {HistoryStore} store @param {string} docId
 */
async function nextKeyframe (store, docId) {
  const base = await store.base(docId)
  const steps = await stepsBetween(store, docId, base?.at ?? -1, Number.MAX_SAFE_INTEGER, KEYFRAME_EVERY + 1)
  if (steps.length === 0) return null
  const last = steps[steps.length - 1].at
  const keyframe = await store.keyframeAt(docId, last)
  if (keyframe && keyframe.at > (base?.at ?? -1)) return keyframe
  const { start, steps: upToLast } = await replayTo(store, docId, last)
  return { at: last, state: stateOf(start, upToLast) }
}
