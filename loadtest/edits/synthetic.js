import { CODE, codeAt } from './code-sample.js'

// Synthetic code editing in one region: mostly typing code at a cursor, some backspacing, some
// overwriting (a rename), and now and then a jump to another place in the region.

const JUMP = 0.1
const INSERT = 0.7
const BACKSPACE = 0.85

export class SyntheticEdits {
  done = false
  #cursor = 0
  #source

  /** @param {{ payload: number, seed: number }} options payload in characters per edit */
  constructor ({ payload, seed }) {
    this.payload = payload
    this.#source = (seed * 977) % CODE.length
  }

  /** The region's starting text. @param {number} bytes 0 for a short stub */
  static seed (bytes) {
    return codeAt(0, bytes > 0 ? bytes : 160)
  }

  /**
   * Makes one edit inside `region` (call inside a transaction); returns the cursor's index.
   * @param {import('yjs').Text} ytext
   * @param {import('./regions.js').Region} region
   */
  apply (ytext, region) {
    const start = region.start()
    const length = region.end() - start
    if (Math.random() < JUMP) this.#cursor = Math.floor(Math.random() * (length + 1))
    this.#cursor = Math.min(this.#cursor, length)
    const kind = Math.random()
    if (kind >= INSERT && kind < BACKSPACE && this.#cursor > 0) {
      const count = Math.min(this.payload, this.#cursor)
      this.#cursor -= count
      ytext.delete(start + this.#cursor, count)
    } else {
      if (kind >= BACKSPACE) ytext.delete(start + this.#cursor, Math.min(this.payload, length - this.#cursor))
      ytext.insert(start + this.#cursor, this.#next())
      this.#cursor += this.payload
    }
    return start + this.#cursor
  }

  #next () {
    const text = codeAt(this.#source, this.payload)
    this.#source = (this.#source + this.payload) % CODE.length
    return text
  }
}
