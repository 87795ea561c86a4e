import * as Y from 'yjs'

/**
 * Local updates the server has not acknowledged yet. Each stays here until its ACK arrives, so it
 * can be sent again after a reconnect; Yjs ignores an update it has already applied, which makes
 * resending always safe.
 */
export class PendingUpdates {
  /** @type {Set<Uint8Array>} */
  #updates = new Set()

  get size () {
    return this.#updates.size
  }

  /** @param {Uint8Array} update */
  add (update) {
    this.#updates.add(update)
  }

  /** @param {Uint8Array} update @returns {boolean} whether it was still pending */
  delete (update) {
    return this.#updates.delete(update)
  }

  /**
   * Replaces every pending update by their merge and returns it. An hour of offline typing is then
   * one message on reconnect instead of one per keystroke. An ACK that arrives later for one of
   * the merged parts finds nothing to delete, and the merge stays pending until its own ACK.
   * @returns {Uint8Array | undefined}
   */
  collapse () {
    if (this.#updates.size === 0) return undefined
    const merged = this.#updates.size === 1 ? [...this.#updates][0] : Y.mergeUpdates([...this.#updates])
    this.#updates = new Set([merged])
    return merged
  }
}
