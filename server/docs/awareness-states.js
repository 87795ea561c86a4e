import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { AppError } from '../errors.js'
import { awarenessUserProblem } from '../../isomorphic/awareness-user.js'

// The server's copy of a document's awareness (cursors, selections, names), in the y-protocols wire
// format: varUint count, then per client varUint clientID, varUint clock, varString JSON state. The
// server keeps the latest state of each client so a joiner sees everyone at once, and writes the
// removal of a departed socket's clients itself, since that socket can no longer say goodbye.

/** @typedef {{ clientId: number, clock: number, state: string }} AwarenessEntry */

/**
 * Client ids one connection may announce in one document. A browser tab has one per document; the
 * margin covers editors re-created on a shared socket. Without a cap, one message could make the
 * server hold millions of cursors.
 */
export const MAX_CLIENTS_PER_CONNECTION = 16
/** Removals kept to order a late, older update of a departed client (oldest forgotten first). */
const MAX_REMOVALS_KEPT = 1024

/** Released client ids kept bound to their user (oldest forgotten first). */
const MAX_RELEASES_KEPT = 4096

/**
 * @typedef {object} AwarenessLimits
 * @property {number} maxStateBytes largest state of one client, in bytes of JSON
 * @property {number} maxTotalBytes states of all clients together, in bytes of JSON
 * @property {number} holdMs how long a released client id stays bound to its user
 */

/**
 * @typedef {object} Announcer who sends an awareness update
 * @property {unknown} owner the connection
 * @property {string | null} user its user; null while auth is off (everyone is the same user)
 * @property {Set<number>} announced the client ids `owner` has announced here; kept up to date
 */

export class AwarenessStates {
  /** @type {Map<number, { clock: number, state: string, bytes: number }>} live clients; state is raw JSON */
  #clients = new Map()
  /** @type {Map<number, number>} clock of each recently removed client */
  #removed = new Map()
  /** @type {Map<number, { owner: unknown, user: string | null }>} who announced each live client id */
  #owners = new Map()
  /** @type {Map<number, { user: string | null, at: number }>} released client ids: their user, and when */
  #released = new Map()
  /** Bytes of JSON of every live state. */
  #bytes = 0

  /**
   * Validates and applies an awareness update from a connection; returns its entries. Changes
   * nothing and throws INVALID_UPDATE if any part of it is malformed (an unsafe `user` included),
   * FORBIDDEN if it speaks for a client id announced by another user, or released by another user
   * within `holdMs` (one user cannot move, hide or take over another's cursor; the same user
   * reconnecting takes its client ids back), RATE_LIMITED if it would leave the connection with more
   * than MAX_CLIENTS_PER_CONNECTION client ids, TOO_LARGE if a state exceeds `maxStateBytes` or the
   * document's states would exceed `maxTotalBytes`.
   * @param {Uint8Array} update
   * @param {Announcer} announcer
   * @param {AwarenessLimits} limits
   * @returns {AwarenessEntry[]}
   */
  apply (update, { owner, user, announced }, { maxStateBytes, maxTotalBytes, holdMs }) {
    const entries = decodeEntries(update)
    const now = Date.now()
    // How many ids `owner` would hold afterwards (an id repeated in one update counts each time).
    let count = announced.size
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
      const bytes = removal ? 0 : Buffer.byteLength(state)
      if (bytes > maxStateBytes) {
        throw new AppError('TOO_LARGE', `an awareness state may hold at most ${maxStateBytes} bytes`)
      }
      if (!removal) count += announced.has(clientId) ? 0 : 1
      else if (announced.has(clientId)) count--
      const known = after.get(clientId)?.clock ?? this.#clients.get(clientId)?.clock ?? this.#removed.get(clientId)
      if (!supersedes(clock, removal, known)) continue
      after.set(clientId, { clock, bytes })
    }
    if (count > MAX_CLIENTS_PER_CONNECTION) {
      throw new AppError('RATE_LIMITED', `a connection may show at most ${MAX_CLIENTS_PER_CONNECTION} awareness clients per document`)
    }
    let total = this.#bytes
    for (const [clientId, { bytes }] of after) total += bytes - (this.#clients.get(clientId)?.bytes ?? 0)
    if (total > maxTotalBytes && total > this.#bytes) {
      throw new AppError('TOO_LARGE', `the awareness states of a document may hold at most ${maxTotalBytes} bytes`)
    }
    for (const { clientId, clock, state } of entries) {
      const removal = state === 'null'
      if (removal) {
        announced.delete(clientId)
        if (this.#owners.delete(clientId)) this.#release(clientId, user, now)
      } else {
        announced.add(clientId)
        this.#owners.set(clientId, { owner, user })
        this.#released.delete(clientId)
      }
      const current = this.#clients.get(clientId)
      if (!supersedes(clock, removal, current?.clock ?? this.#removed.get(clientId))) continue
      if (current) this.#bytes -= current.bytes
      if (!removal) {
        this.#removed.delete(clientId)
        const bytes = Buffer.byteLength(state)
        this.#clients.set(clientId, { clock, state, bytes })
        this.#bytes += bytes
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
      this.#release(clientId, announcer.user, now)
      const current = this.#clients.get(clientId)
      if (!current) continue
      this.#clients.delete(clientId)
      this.#bytes -= current.bytes
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

  /** Client ids held: live ones and the removals kept for ordering. */
  get size () {
    return this.#clients.size + this.#removed.size
  }

  /** @param {number} clientId @param {string | null} user @param {number} now */
  #release (clientId, user, now) {
    this.#released.delete(clientId)
    this.#released.set(clientId, { user, at: now })
    if (this.#released.size > MAX_RELEASES_KEPT) this.#released.delete(/** @type {number} */ (this.#released.keys().next().value))
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

/** @param {Uint8Array} update @returns {AwarenessEntry[]} */
function decodeEntries (update) {
  try {
    const decoder = decoding.createDecoder(update)
    const count = decoding.readVarUint(decoder)
    /** @type {AwarenessEntry[]} */
    const entries = []
    for (let i = 0; i < count; i++) {
      const clientId = decoding.readVarUint(decoder)
      const clock = decoding.readVarUint(decoder)
      const state = decoding.readVarString(decoder)
      const parsed = JSON.parse(state)
      if (parsed !== null && typeof parsed !== 'object') throw new Error('state must be an object or null')
      const problem = parsed?.user === undefined ? null : awarenessUserProblem(parsed.user)
      if (problem) throw new AppError('INVALID_UPDATE', problem)
      entries.push({ clientId, clock, state })
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
