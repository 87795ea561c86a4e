import * as Y from 'yjs'

// Every editor of a room edits its own region of the shared text, the way people working together on
// a file each work on their own function. Regions are separated by marker lines that nobody edits, so
// an editor can always find where its region starts and ends (through Yjs relative positions, which
// follow the marker wherever other editors' inserts push it), and a trace replayed in a region sees
// exactly the text the trace expects.

/** @param {number} slot */
export const separator = slot => `\n\n/* ~~~~ region ${slot + 1} ~~~~ */\n\n`

/**
 * The text of a document whose regions start as `texts`.
 * @param {string[]} texts one per editor of the room
 */
export function layout (texts) {
  return texts.map((text, slot) => slot === 0 ? text : separator(slot - 1) + text).join('')
}

export class Region {
  /** @type {Y.RelativePosition | null} first character of the separator before the region */
  #before = null
  /** @type {Y.RelativePosition | null} first character of the separator after it */
  #after = null

  /**
   * Locates region `slot` of `slots` in a document synced from `layout` (before anyone edited it).
   * @param {Y.Text} ytext
   * @param {number} slot
   * @param {number} slots
   */
  constructor (ytext, slot, slots) {
    this.ytext = ytext
    this.doc = /** @type {Y.Doc} */ (ytext.doc)
    this.slot = slot
    const text = ytext.toString()
    if (slot > 0) this.#before = this.#anchor(text, slot - 1)
    if (slot < slots - 1) this.#after = this.#anchor(text, slot)
    this.beforeLength = slot > 0 ? separator(slot - 1).length : 0
  }

  /** Index of the region's first character. */
  start () {
    return this.#before ? this.#resolve(this.#before) + this.beforeLength : 0
  }

  /** Index just past the region's last character. */
  end () {
    return this.#after ? this.#resolve(this.#after) : this.ytext.length
  }

  /** @param {string} text @param {number} slot */
  #anchor (text, slot) {
    const index = text.indexOf(separator(slot))
    if (index < 0) throw new Error(`region separator ${slot + 1} not found in the document`)
    return Y.createRelativePositionFromTypeIndex(this.ytext, index)
  }

  /** @param {Y.RelativePosition} position */
  #resolve (position) {
    const absolute = Y.createAbsolutePositionFromRelativePosition(position, this.doc)
    if (!absolute) throw new Error('region separator lost')
    return absolute.index
  }
}
