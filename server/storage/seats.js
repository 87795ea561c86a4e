// Seats in sessions: a join takes one before it enters the room, and its membership gives it back
// when it ends, so at most `maxEditors` editors hold a session at once. One process counts its own
// (below); processes that share Redis count them there (redis-seats.js).

/**
 * @typedef {object} Seats
 * @property {(docId: string, maxEditors: number) => Promise<number | null>} take the editors with
 *   this one, or null when the session is full
 * @property {(docId: string) => void} free gives back a seat `take` gave
 * @property {(docIds: string[]) => Promise<number[]>} counts editors per document, every process's
 * @property {() => Promise<void>} close
 */

/** @implements {Seats} */
export class LocalSeats {
  /** @type {Map<string, number>} */
  #held = new Map()

  /** @param {string} docId @param {number} maxEditors */
  async take (docId, maxEditors) {
    const seats = (this.#held.get(docId) ?? 0) + 1
    if (seats > maxEditors) return null
    this.#held.set(docId, seats)
    return seats
  }

  /** @param {string} docId */
  free (docId) {
    const seats = (this.#held.get(docId) ?? 1) - 1
    if (seats > 0) this.#held.set(docId, seats)
    else this.#held.delete(docId)
  }

  /** @param {string[]} docIds */
  async counts (docIds) {
    return docIds.map(docId => this.#held.get(docId) ?? 0)
  }

  async close () {}
}
