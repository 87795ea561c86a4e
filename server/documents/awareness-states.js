import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { AppError } from '../errors.js'
import { keptState } from './awareness-fields.js'

// The server's copy of a document's awareness (cursors, selections, names), in the y-protocols wire
// format: varUint count, then per client varUint clientID, varUint clock, varString JSON state. The
// server keeps the latest state of each client (only the fields editors draw: awareness-fields.js)
// so a joiner sees everyone at once, and writes the removal of a departed socket's clients itself,
// since that socket can no longer say goodbye.

/** @typedef {{ clientId: number, clock: number, state: string }} AwarenessEntry */

/**
 * Client ids one connection may announce in one document. A browser tab has one per document; the
 * margin covers editors re-created on a shared socket. Without a cap, one message could make the
 * server hold millions of cursors.
 */
export const MAX_CLIENTS_PER_CONNECTION = 16
/** Removals kept to order a late, older update of a departed client (oldest forgotten first). */
const MAX_REMOVALS_KEPT = 1024

/**
 * @typedef {object} AwarenessLimits
 * @property {number} maxStateBytes largest state of one client as sent, in bytes of JSON
 * @property {number} maxTotalBytes states of all clients together, in bytes of JSON
 * @property {number} maxUserBytes states of one user's clients together, in bytes of JSON (0 = no limit)
 * @property {number} maxUserIds client ids one user may hold: live, or released within `holdMs`
 * @property {number} holdMs how long a released client id stays bound to its user
 */

/**
 * @typedef {object} Announcer who sends an awareness update
 * @property {unknown} owner the connection
 * @property {string | null} user its user; null while auth is off (everyone is the same user)
 * @property {Set<number>} announced the client ids `owner` has announced here; kept up to date
 */

export class AwarenessStates {
  /** @type {Map<number, { clock: number, state: string, bytes: number, user: string | null, account: unknown }>} live clients: JSON state, its user, and whom its bytes count against */
  #clients = new Map()
  /** @type {Map<number, number>} clock of each recently removed client */
  #removed = new Map()
  /** @type {Map<number, { owner: unknown, user: string | null }>} who announced each live client id */
  #owners = new Map()
  /** @type {Map<number, { user: string, at: number }>} released client ids, oldest first: their user, and when */
  #released = new Map()
  /** @type {Map<string, number>} client ids bound to each user: announced, or released and still held */
  #idsOf = new Map()
  /** Bytes of JSON of every live state. */
  #bytes = 0
  /** @type {Map<unknown, number>} bytes of JSON of the live states of each user (with auth off, each connection) */
  #bytesOf = new Map()

  /**
   * Validates and applies an awareness update from a connection; returns its entries, each state
   * cut to the fields editors draw. Changes nothing and throws INVALID_UPDATE if any part of it is
   * malformed (a `user`, `cursor` or `selection` editors could not draw included), FORBIDDEN if it
   * speaks for a client id announced by another user, or released by another user within `holdMs`
   * (one user cannot move, hide or take over another's cursor; the same user reconnecting takes its
   * client ids back), RATE_LIMITED if it would leave the connection with more than
   * MAX_CLIENTS_PER_CONNECTION client ids or bind more than `maxUserIds` to its user, TOO_LARGE if
   * a state as sent exceeds `maxStateBytes`, the user's states `maxUserBytes` or the document's
   * states `maxTotalBytes`.
   * @param {Uint8Array} update
   * @param {Announcer} announcer
   * @param {AwarenessLimits} limits
   * @returns {AwarenessEntry[]}
   */
  apply (update, { owner, user, announced }, { maxStateBytes, maxTotalBytes, maxUserBytes, maxUserIds, holdMs }) {
    const entries = decodeEntries(update, maxStateBytes)
    const now = Date.now()
    this.#expireHolds(now, holdMs)
    // How many ids `owner` would hold afterwards (an id repeated in one update counts each time).
    let count = announced.size
    /** @type {Set<number>} ids this update would bind to `user` anew */
    const bound = new Set()
    /** @type {Map<number, { clock: number, bytes: number }>} what each id would hold afterwards */
    const after = new Map()
    for (const { clientId, clock, state } of entries) {
      const current = this.#owners.get(clientId)
      if (current !== undefined && current.owner !== owner && current.user !== user) {
        throw new AppError('FORBIDDEN', `awareness client ${clientId} belongs to another user`)
      }
      const released = this.#released.get(clientId)
      if (current === undefined && released !== undefined && released.user !== user && now - released.at < holdMs) {
        throw new AppError('FORBIDDEN', `awareness client ${clientId} was released by another user a moment ago`)
      }
      const removal = state === 'null'
      if (!removal) count += announced.has(clientId) ? 0 : 1
      else if (announced.has(clientId)) count--
      if (!removal && current === undefined && released?.user !== user) bound.add(clientId)
      const known = after.get(clientId)?.clock ?? this.#clients.get(clientId)?.clock ?? this.#removed.get(clientId)
      if (!supersedes(clock, removal, known)) continue
      after.set(clientId, { clock, bytes: removal ? 0 : Buffer.byteLength(state) })
    }
    if (count > MAX_CLIENTS_PER_CONNECTION) {
      throw new AppError('RATE_LIMITED', `a connection may show at most ${MAX_CLIENTS_PER_CONNECTION} awareness clients per document`)
    }
    // Holds are what keep a departed editor's cursor its own, so none is forgotten early: instead a
    // user may bind only so many ids (live and held), and announcing and clearing fresh ids in a
    // loop stops there. With auth off everyone is one user, whom no hold could stop: none is kept.
    if (user !== null && (this.#idsOf.get(user) ?? 0) + bound.size > maxUserIds) {
      throw new AppError('RATE_LIMITED', `a user may hold at most ${maxUserIds} awareness client ids per document (announced, or released within AWARENESS_ID_HOLD_MS)`)
    }
    let total = this.#bytes
    // With auth off there is no user to count against, and a guest is a connection.
    const account = user ?? owner
    const userBefore = this.#bytesOf.get(account) ?? 0
    let userTotal = userBefore
    for (const [clientId, { bytes }] of after) {
      const current = this.#clients.get(clientId)
      total += bytes - (current?.bytes ?? 0)
      userTotal += bytes - (current !== undefined && current.account === account ? current.bytes : 0)
    }
    if (total > maxTotalBytes && total > this.#bytes) {
      throw new AppError('TOO_LARGE', `the awareness states of a document may hold at most ${maxTotalBytes} bytes`)
    }
    // Every join reply carries all states: one user, however many connections, adds this much.
    if (maxUserBytes !== 0 && userTotal > maxUserBytes && userTotal > userBefore) {
      throw new AppError('TOO_LARGE', `the awareness states of one user may hold at most ${maxUserBytes} bytes per document`)
    }
    for (const { clientId, clock, state } of entries) {
      const removal = state === 'null'
      if (removal) {
        announced.delete(clientId)
        if (this.#owners.delete(clientId)) this.#hold(clientId, user, now)
      } else {
        announced.add(clientId)
        this.#take(clientId, owner, user)
      }
      const current = this.#clients.get(clientId)
      if (!supersedes(clock, removal, current?.clock ?? this.#removed.get(clientId))) continue
      if (current) this.#count(current.account, -current.bytes)
      if (!removal) {
        this.#removed.delete(clientId)
        const bytes = Buffer.byteLength(state)
        this.#clients.set(clientId, { clock, state, bytes, user, account })
        this.#count(account, bytes)
      } else if (current) {
        this.#clients.delete(clientId)
        this.#remember(clientId, clock)
      }
    }
    return entries
  }

  /**
   * Marks the clients `owner` announced as gone and returns the update that tells the others. Ids
   * another connection has taken over since (a reconnect) are left alone. The ids stay bound to the
   * owner's user for `holdMs` (see `apply`).
   * @param {Iterable<number>} clientIds
   * @param {unknown} owner
   * @returns {Uint8Array | null} null when nothing was removed
   */
  remove (clientIds, owner) {
    /** @type {AwarenessEntry[]} */
    const removed = []
    const now = Date.now()
    for (const clientId of clientIds) {
      const announcer = this.#owners.get(clientId)
      if (announcer === undefined || announcer.owner !== owner) continue
      this.#owners.delete(clientId)
      this.#hold(clientId, announcer.user, now)
      const current = this.#clients.get(clientId)
      if (!current) continue
      this.#clients.delete(clientId)
      this.#count(current.account, -current.bytes)
      this.#remember(clientId, current.clock + 1)
      removed.push({ clientId, clock: current.clock + 1, state: 'null' })
    }
    return removed.length > 0 ? encodeEntries(removed) : null
  }

  /**
   * The current entries of `clientIds` (removals included), as one update; ids no longer held are
   * left out.
   * @param {Iterable<number>} clientIds
   */
  encode (clientIds) {
    /** @type {AwarenessEntry[]} */
    const entries = []
    for (const clientId of clientIds) {
      const current = this.#clients.get(clientId)
      const removedAt = this.#removed.get(clientId)
      if (current) entries.push({ clientId, ...current })
      else if (removedAt !== undefined) entries.push({ clientId, clock: removedAt, state: 'null' })
    }
    return encodeEntries(entries)
  }

  /** The live states of every client, as one update for a joiner. */
  encodeAll () {
    /** @type {AwarenessEntry[]} */
    const live = []
    for (const [clientId, { clock, state }] of this.#clients) live.push({ clientId, clock, state })
    return encodeEntries(live)
  }

  /** Released client ids held for their user. */
  get held () {
    return this.#released.size
  }

  /** Client ids held: live ones and the removals kept for ordering. */
  get size () {
    return this.#clients.size + this.#removed.size
  }

  /**
   * `owner` announces `clientId` for `user`: a new id counts against the user, one it held or
   * announced on another connection already does.
   * @param {number} clientId @param {unknown} owner @param {string | null} user
   */
  #take (clientId, owner, user) {
    const announced = this.#owners.has(clientId)
    this.#owners.set(clientId, { owner, user })
    if (announced) return
    const released = this.#released.get(clientId)
    this.#released.delete(clientId)
    if (released?.user === user) return
    if (released !== undefined) this.#bind(released.user, -1)
    this.#bind(user, 1)
  }

  /** A live id of `user` is released: it stays bound to the user for the hold. @param {number} clientId @param {string | null} user @param {number} now */
  #hold (clientId, user, now) {
    if (user === null) return
    this.#released.delete(clientId)
    this.#released.set(clientId, { user, at: now })
  }

  /** Frees the ids held for `holdMs` already, oldest first. @param {number} now @param {number} holdMs */
  #expireHolds (now, holdMs) {
    for (const [clientId, { user, at }] of this.#released) {
      if (now - at < holdMs) break
      this.#released.delete(clientId)
      this.#bind(user, -1)
    }
  }

  /** @param {string | null} user @param {number} change */
  #bind (user, change) {
    if (user === null) return
    const ids = (this.#idsOf.get(user) ?? 0) + change
    if (ids > 0) this.#idsOf.set(user, ids)
    else this.#idsOf.delete(user)
  }

  /** @param {unknown} account a user, or with auth off a connection @param {number} bytes */
  #count (account, bytes) {
    this.#bytes += bytes
    const held = (this.#bytesOf.get(account) ?? 0) + bytes
    if (held > 0) this.#bytesOf.set(account, held)
    else this.#bytesOf.delete(account)
  }

  /** @param {number} clientId @param {number} clock */
  #remember (clientId, clock) {
    this.#removed.delete(clientId)
    this.#removed.set(clientId, clock)
    if (this.#removed.size > MAX_REMOVALS_KEPT) this.#removed.delete(/** @type {number} */ (this.#removed.keys().next().value))
  }
}

/**
 * Same rule as y-protocols: a newer clock wins; a removal at the same clock also wins.
 * @param {number} clock @param {boolean} removal @param {number | undefined} known the clock held
 */
function supersedes (clock, removal, known) {
  return known === undefined || clock > known || (clock === known && removal)
}

/**
 * The entries of an update, each state cut to the fields editors draw.
 * @param {Uint8Array} update @param {number} maxStateBytes @returns {AwarenessEntry[]}
 */
function decodeEntries (update, maxStateBytes) {
  try {
    const decoder = decoding.createDecoder(update)
    const count = decoding.readVarUint(decoder)
    /** @type {AwarenessEntry[]} */
    const entries = []
    for (let i = 0; i < count; i++) {
      const clientId = decoding.readVarUint(decoder)
      const clock = decoding.readVarUint(decoder)
      const sent = decoding.readVarString(decoder)
      if (Buffer.byteLength(sent) > maxStateBytes) {
        throw new AppError('TOO_LARGE', `an awareness state may hold at most ${maxStateBytes} bytes`)
      }
      const parsed = JSON.parse(sent)
      entries.push({ clientId, clock, state: parsed === null ? 'null' : keptState(parsed) })
    }
    if (decoding.hasContent(decoder)) throw new Error('trailing bytes')
    return entries
  } catch (err) {
    if (err instanceof AppError) throw err
    throw new AppError('INVALID_UPDATE', 'update is not a valid awareness update')
  }
}

/** @param {AwarenessEntry[]} entries */
function encodeEntries (entries) {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, entries.length)
  for (const { clientId, clock, state } of entries) {
    encoding.writeVarUint(encoder, clientId)
    encoding.writeVarUint(encoder, clock)
    encoding.writeVarString(encoder, state)
  }
  return encoding.toUint8Array(encoder)
}
