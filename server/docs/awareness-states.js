import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import { AppError } from '../errors.js'

// The server's copy of a document's awareness (cursors, selections, names), in the y-protocols wire
// format: varUint count, then per client varUint clientID, varUint clock, varString JSON state. The
// server keeps the latest state of each client so a joiner sees everyone at once, and writes the
// removal of a departed socket's clients itself, since that socket can no longer say goodbye.

/** @typedef {{ clientId: number, clock: number, state: string }} AwarenessEntry */

export class AwarenessStates {
  /** @type {Map<number, { clock: number, state: string }>} state is raw JSON; 'null' means removed */
  #clients = new Map()
  /** @type {Map<number, unknown>} which connection announced each live client id */
  #owners = new Map()

  /**
   * Validates and applies an awareness update from `owner` (a connection); returns its entries.
   * Changes nothing and throws INVALID_UPDATE if any part of it is malformed, FORBIDDEN if it speaks
   * for a client id announced by a connection it may not replace (one user cannot move or hide
   * another's cursor; the same user reconnecting takes its client ids over).
   * @param {Uint8Array} update
   * @param {unknown} owner
   * @param {(previousOwner: unknown) => boolean} mayReplace
   * @returns {AwarenessEntry[]}
   */
  apply (update, owner, mayReplace) {
    const entries = decodeEntries(update)
    for (const { clientId } of entries) {
      const current = this.#owners.get(clientId)
      if (current !== undefined && current !== owner && !mayReplace(current)) {
        throw new AppError('FORBIDDEN', `awareness client ${clientId} belongs to another user`)
      }
    }
    for (const { clientId, clock, state } of entries) {
      if (state === 'null') this.#owners.delete(clientId)
      else this.#owners.set(clientId, owner)
      const current = this.#clients.get(clientId)
      // Same rule as y-protocols: a newer clock wins; a removal at the same clock also wins.
      if (!current || current.clock < clock || (current.clock === clock && state === 'null')) {
        this.#clients.set(clientId, { clock, state })
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
      const current = this.#clients.get(clientId)
      if (this.#owners.get(clientId) !== owner) continue
      this.#owners.delete(clientId)
      if (!current) continue
      this.#clients.delete(clientId)
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
      if (current) entries.push({ clientId, ...current })
    }
    return encodeEntries(entries)
  }

  /** The live states of every client, as one update for a joiner. */
  encodeAll () {
    /** @type {AwarenessEntry[]} */
    const live = []
    for (const [clientId, { clock, state }] of this.#clients) {
      if (state !== 'null') live.push({ clientId, clock, state })
    }
    return encodeEntries(live)
  }

  get size () {
    return this.#clients.size
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
