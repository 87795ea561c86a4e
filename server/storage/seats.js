// A seat: a join takes one before it enters the room and gives it back when it leaves. An editor's
// counts against `maxEditors`, a viewer's does not (viewers cannot lock editors out); any seat of a
// user counts against `maxConnectionsPerUser`. Counted here in one process, in Redis across several
// (redis-seats.js).

import { ROLES } from '../../isomorphic/events.js'

/** The counter of a session's editors. */
export const EDITORS = 'seats'

/**
 * @typedef {object} Holder who takes a seat: a join's grant, or the membership made from it
 * @property {'editor' | 'viewer'} role
 * @property {string | null} user null while auth is off, when there are no users to count
 */

/**
 * @typedef {object} SeatLimits
 * @property {number} maxEditors the session's
 * @property {number} maxPerUser connections one user may join the document with (0 = no limit)
 */

/**
 * The session's editors (with this one), or which limit refused the seat.
 * @typedef {{ editors: number } | { full: 'editors' | 'user' }} Taken
 */

/**
 * @typedef {object} Seats
 * @property {(docId: string, holder: Holder, limits: SeatLimits) => Promise<Taken>} take
 * @property {(docId: string, holder: Holder) => void} free gives back a seat `take` gave the holder
 * @property {(docIds: string[]) => Promise<number[]>} counts editors per document, every process's
 * @property {() => Promise<void>} close
 */

/**
 * The session's editors for an editor's seat (always first), its user's connections for any with a
 * user, each with its limit (0 = none).
 * @param {Holder} holder @param {SeatLimits} [limits] only needed to take a seat
 * @returns {{ counter: string, limit: number, full: 'editors' | 'user' }[]}
 */
export function countersOf ({ role, user }, limits = { maxEditors: 0, maxPerUser: 0 }) {
  const counters = []
  if (role === ROLES.EDITOR) counters.push({ counter: EDITORS, limit: limits.maxEditors, full: /** @type {const} */ ('editors') })
  if (user !== null) counters.push({ counter: `connections:${user}`, limit: limits.maxPerUser, full: /** @type {const} */ ('user') })
  return counters
}

/** @implements {Seats} */
export class LocalSeats {
  /** @type {Map<string, number>} seats per document and counter */
  #held = new Map()

  /** @param {string} docId @param {Holder} holder @param {SeatLimits} limits */
  async take (docId, holder, limits) {
    const counters = countersOf(holder, limits)
    for (const { counter, limit, full } of counters) {
      if (limit > 0 && this.#count(docId, counter) >= limit) return { full }
    }
    for (const { counter } of counters) this.#held.set(keyOf(docId, counter), this.#count(docId, counter) + 1)
    return { editors: this.#count(docId, EDITORS) }
  }

  /** @param {string} docId @param {Holder} holder */
  free (docId, holder) {
    for (const { counter } of countersOf(holder)) {
      const seats = this.#count(docId, counter) - 1
      if (seats > 0) this.#held.set(keyOf(docId, counter), seats)
      else this.#held.delete(keyOf(docId, counter))
    }
  }

  /** @param {string[]} docIds */
  async counts (docIds) {
    return docIds.map(docId => this.#count(docId, EDITORS))
  }

  async close () {}

  /** @param {string} docId @param {string} counter */
  #count (docId, counter) {
    return this.#held.get(keyOf(docId, counter)) ?? 0
  }
}

/** Document ids have no spaces. @param {string} docId @param {string} counter */
const keyOf = (docId, counter) => `${docId} ${counter}`
