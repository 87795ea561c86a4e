import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { AppError } from '../errors.js'

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

export class AwarenessStates {
  /** @type {Map<number, { clock: number, state: string }>} live clients; state is raw JSON */
  #clients = new Map()
  /** @type {Map<number, number>} clock of each recently removed client */
  #removed = new Map()
  /** @type {Map<number, unknown>} which connection announced each live client id */
  #owners = new Map()

  /**
   * Validates and applies an awareness update from `owner` (a connection); returns its entries.
   * Changes nothing and throws INVALID_UPDATE if any part of it is malformed, FORBIDDEN if it speaks
   * for a client id announced by a connection it may not replace (one user cannot move or hide
   * another's cursor; the same user reconnecting takes its client ids over), RATE_LIMITED if it
   * would leave `owner` with more than MAX_CLIENTS_PER_CONNECTION client ids.
   * @param {Uint8Array} update
   * @param {unknown} owner
   * @param {Set<number>} announced the client ids `owner` has announced here; kept up to date
   * @param {(previousOwner: unknown) => boolean} mayReplace
   * @returns {AwarenessEntry[]}
   */
  apply (update, owner, announced, mayReplace) {
    const entries = decodeEntries(update)
    // How many ids `owner` would hold afterwards (an id repeated in one update counts each time).
    let count = announced.size
    for (const { clientId, state } of entries) {
      const current = this.#owners.get(clientId)
      if (current !== undefined && current !== owner && !mayReplace(current)) {
        throw new AppError('FORBIDDEN', `awareness client ${clientId} belongs to another user`)
      }
      if (state !== 'null') count += announced.has(clientId) ? 0 : 1
      else if (announced.has(clientId)) count--
    }
    if (count > MAX_CLIENTS_PER_CONNECTION) {
      throw new AppError('RATE_LIMITED', `a connection may show at most ${MAX_CLIENTS_PER_CONNECTION} awareness clients per document`)
    }
    for (const { clientId, clock, state } of entries) {
      const removal = state === 'null'
      if (removal) {
        announced.delete(clientId)
        this.#owners.delete(clientId)
      } else {
        announced.add(clientId)
        this.#owners.set(clientId, owner)
      }
      // Same rule as y-protocols: a newer clock wins; a removal at the same clock also wins.
      const current = this.#clients.get(clientId)
      const known = current?.clock ?? this.#removed.get(clientId)
      if (known !== undefined && (known > clock || (known === clock && !removal))) continue
      if (!removal) {
        this.#removed.delete(clientId)
        this.#clients.set(clientId, { clock, state })
      } else if (current) {
        this.#clients.delete(clientId)
        this.#remember(clientId, clock)
      }
    }
    return entries
  }

  /**
   * Marks the clients `owner` announced as gone and returns the update that tells the others. Ids
   * another connection has taken over since (a reconnect) are left alone.
   * @param {Iterable<number>} clientIds
   * @param {unknown} owner
   * @returns {Uint8Array | null} null when nothing was removed
   */
  remove (clientIds, owner) {
    /** @type {AwarenessEntry[]} */
    const removed = []
    for (const clientId of clientIds) {
      if (this.#owners.get(clientId) !== owner) continue
      this.#owners.delete(clientId)
      const current = this.#clients.get(clientId)
      if (!current) continue
      this.#clients.delete(clientId)
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

  /** @param {number} clientId @param {number} clock */
  #remember (clientId, clock) {
    this.#removed.delete(clientId)
    this.#removed.set(clientId, clock)
    if (this.#removed.size > MAX_REMOVALS_KEPT) this.#removed.delete(/** @type {number} */ (this.#removed.keys().next().value))
  }
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
      entries.push({ clientId, clock, state })
    }
    if (decoding.hasContent(decoder)) throw new Error('trailing bytes')
    return entries
  } catch {
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
