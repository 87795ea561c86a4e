import * as Y from 'yjs'
import { TEXT_NAME } from '../../../isomorphic/events.js'

/**
 * @typedef {object} Step one stored update of the session, or one folded minute of them
 * @property {number} at when it was stored, in ms
 * @property {string | null} by who sent it
 * @property {Uint8Array} update
 */

/** @typedef {{ from: number, to: number, by: string | null }} Span a run of text one author typed */

/** Steps between two kept states: seeking back replays at most this many. */
const KEYFRAME_EVERY = 200

/** Longest pause played as it was, in ms of the session: longer ones are cut to this. */
export const LONGEST_PAUSE_MS = 2000

/**
 * A session's text step by step, from the state history starts at: `seek(i)` gives the text after
 * the first `i` steps and who typed each part of it.
 */
export class Playback {
  /** @type {{ index: number, state: Uint8Array }[]} */
  #keyframes
  /** @type {Y.Doc} */
  #ydoc
  #index = 0
  /** @type {Map<number, string | null>} Yjs client id → the author whose step first used it */
  #authors = new Map()

  /** @param {Uint8Array} base the document when the first step was stored @param {Step[]} steps oldest first */
  constructor (base, steps) {
    this.steps = steps
    this.#keyframes = [{ index: 0, state: base }]
    this.#ydoc = docOf(base)
    for (const step of steps) {
      for (const client of Y.parseUpdateMeta(step.update).to.keys()) {
        if (!this.#authors.has(client)) this.#authors.set(client, step.by)
      }
    }
  }

  get index () {
    return this.#index
  }

  /** The text after the first `index` steps. @param {number} index */
  seek (index) {
    const target = Math.max(0, Math.min(index, this.steps.length))
    if (target < this.#index) {
      // Kept in order of index, the first at 0.
      let keyframe = this.#keyframes[0]
      for (const candidate of this.#keyframes) if (candidate.index <= target) keyframe = candidate
      this.#ydoc.destroy()
      this.#ydoc = docOf(keyframe.state)
      this.#index = keyframe.index
    }
    Y.transact(this.#ydoc, () => {
      for (; this.#index < target; this.#index++) {
        Y.applyUpdate(this.#ydoc, this.steps[this.#index].update)
        const next = this.#index + 1
        if (next % KEYFRAME_EVERY === 0 && !this.#keyframes.some(({ index }) => index === next)) {
          this.#keyframes.push({ index: next, state: Y.encodeStateAsUpdate(this.#ydoc) })
          this.#keyframes.sort((a, b) => a.index - b.index)
        }
      }
    })
    return this.text
  }

  get text () {
    return this.#ydoc.getText(TEXT_NAME).toString()
  }

  /**
   * Who typed each part of the text as it stands, adjacent parts of one author joined; text from
   * before history starts has `by` null.
   * @returns {Span[]}
   */
  spans () {
    /** @type {Span[]} */
    const spans = []
    let position = 0
    for (let item = this.#ydoc.getText(TEXT_NAME)._start; item !== null; item = item.right) {
      if (item.deleted || !item.countable) continue
      const by = this.#authors.get(item.id.client) ?? null
      const last = spans.at(-1)
      if (last && last.by === by && last.to === position) last.to += item.length
      else spans.push({ from: position, to: position + item.length, by })
      position += item.length
    }
    return spans
  }

  /** Wall-clock ms to wait before step `index` at `speed`: the session's own pace, long pauses cut. @param {number} index @param {number} speed */
  delayBefore (index, speed) {
    if (index <= 0 || index >= this.steps.length) return 0
    return Math.min(this.steps[index].at - this.steps[index - 1].at, LONGEST_PAUSE_MS) / speed
  }

  destroy () {
    this.#ydoc.destroy()
  }
}

/** @param {Uint8Array} state */
function docOf (state) {
  const ydoc = new Y.Doc()
  Y.applyUpdate(ydoc, state)
  return ydoc
}
