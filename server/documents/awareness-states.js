import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { AppError } from '../errors.js'
import { keptState } from './awareness-fields.js'

// A document's awareness in the y-protocols wire format (count, then clientID, clock, JSON state per
// client): the latest state of each client, so a joiner sees everyone at once, and the removals of a
// departed socket's clients, which it can no longer send itself.

/** @typedef {{ clientId: number, clock: number, state: string }} AwarenessEntry */

/**
 * Per connection and document: a tab has one, the margin covers editors re-created on a shared
 * socket. Uncapped, one message could add millions of cursors.
 */
export const MAX_CLIENTS_PER_CONNECTION = 16
/** Removals kept to order a late, older update of a departed client. */
const MAX_REMOVALS_KEPT = 1024

/** @typedef {{ maxStateBytes: number, maxTotalBytes: number, maxUserBytes: number, maxUserIds: number, holdMs: number }} AwarenessLimits as in config.js */

/**
 * @typedef {object} Announcer who sends an awareness update
 * @property {unknown} owner the connection
 * @property {string | null} user null while auth is off
 * @property {Set<number>} announced the client ids `owner` has announced here; kept up to date
 */

export class AwarenessStates {
  /** @type {Map<number, { clock: number, state: string, bytes: number, user: string | null, account: unknown }>} live clients; `account`: whom the bytes count against */
  #clients = new Map()
  /** @type {Map<number, number>} clock of each recently removed client */
  #removed = new Map()
  /** @type {Map<number, { owner: unknown, user: string | null }>} who announced each live client id */
  #owners = new Map()
  /** @type {Map<number, { user: string, at: number }>} released client ids, oldest first: their user, and when */
  #released = new Map()
  /** @type {Map<string, number>} client ids bound to each user: announced, or released and still held */
  #idsOf = new Map()
  #bytes = 0
  /** @type {Map<unknown, number>} bytes of the live states of each user (auth off: each connection) */
  #bytesOf = new Map()

  /**
   * Applies a connection's update, or changes nothing and throws: INVALID_UPDATE if malformed,
   * FORBIDDEN for another user's client id (live, or released within `holdMs`), RATE_LIMITED past
   * MAX_CLIENTS_PER_CONNECTION or `maxUserIds`, TOO_LARGE past a byte limit.
   * @param {Uint8Array} update @param {Announcer} announcer @param {AwarenessLimits} limits
   * @returns {AwarenessEntry[]} cut to the fields editors draw
   */
  apply (update, { owner, user, announced }, { maxStateBytes, maxTotalBytes, maxUserBytes, maxUserIds, holdMs }) {
    const entries = decodeEntries(update, maxStateBytes)
    const now = Date.now()
    this.#expireHolds(now, holdMs)
    // Ids `owner` would hold afterwards (an id repeated in one update counts each time).
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
    // Holds keep a departed editor's cursor its own, so none is dropped early; a user may bind only so
    // many ids instead. With auth off everyone is one user, and no hold is kept.
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
    // Every join reply carries all states.
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
   * Removes the clients `owner` announced (not those another connection took over); they stay bound
   * to its user for `holdMs`. @param {Iterable<number>} clientIds @param {unknown} owner
   * @returns {Uint8Array | null} the update that tells the others
   */
  remove (clientIds, owner) {
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

  /** Current entries, removals included, as one update. @param {Iterable<number>} clientIds */
  encode (clientIds) {
    const entries = []
    for (const clientId of clientIds) {
      const current = this.#clients.get(clientId)
      const removedAt = this.#removed.get(clientId)
      if (current) entries.push({ clientId, ...current })
      else if (removedAt !== undefined) entries.push({ clientId, clock: removedAt, state: 'null' })
    }
    return encodeEntries(entries)
  }

  /** For a joiner. */
  encodeAll () {
    const live = []
    for (const [clientId, { clock, state }] of this.#clients) live.push({ clientId, clock, state })
    return encodeEntries(live)
  }

  /** Released client ids held for their user. */
  get held () {
    return this.#released.size
  }

  /** Live client ids and removals kept. */
  /**
   * The name the connection's newest awareness state shows (`user.name`), or null.
   * @param {unknown} owner the connection
   */
  nameOf (owner) {
    let name = null
    for (const [clientId, announcer] of this.#owners) {
      if (announcer.owner !== owner) continue
      const state = this.#clients.get(clientId)?.state
      const user = state === undefined ? undefined : JSON.parse(state).user
      if (typeof user?.name === 'string') name = user.name
    }
    return name
  }

  get size () {
    return this.#clients.size + this.#removed.size
  }

  /** A new id counts against `user`; one it held or announced elsewhere already does. @param {number} clientId @param {unknown} owner @param {string | null} user */
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

  /** @param {number} clientId @param {string | null} user @param {number} now */
  #hold (clientId, user, now) {
    if (user === null) return
    this.#released.delete(clientId)
    this.#released.set(clientId, { user, at: now })
  }

  /** Oldest first. @param {number} now @param {number} holdMs */
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
 * As y-protocols: a newer clock wins, and a removal at the same clock.
 * @param {number} clock @param {boolean} removal @param {number | undefined} known the clock held
 */
function supersedes (clock, removal, known) {
  return known === undefined || clock > known || (clock === known && removal)
}

/** Each state cut to the fields editors draw. @param {Uint8Array} update @param {number} maxStateBytes @returns {AwarenessEntry[]} */
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
