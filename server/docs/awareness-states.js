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

  /**
   * Validates and applies an awareness update; returns its entries. Throws INVALID_UPDATE and changes
   * nothing if any part of it is malformed.
   * @param {Uint8Array} update
   * @returns {AwarenessEntry[]}
   */
  apply (update) {
    const entries = decodeEntries(update)
    for (const { clientId, clock, state } of entries) {
      const current = this.#clients.get(clientId)
      // Same rule as y-protocols: a newer clock wins; a removal at the same clock also wins.
      if (!current || current.clock < clock || (current.clock === clock && state === 'null')) {
        this.#clients.set(clientId, { clock, state })
      }
    }
    return entries
  }

  /**
   * Marks clients as gone and returns the update that tells the others.
   * @param {Iterable<number>} clientIds
   */
  remove (clientIds) {
    /** @type {AwarenessEntry[]} */
    const removed = []
    for (const clientId of clientIds) {
      const current = this.#clients.get(clientId)
      if (!current) continue
      this.#clients.delete(clientId)
      removed.push({ clientId, clock: current.clock + 1, state: 'null' })
    }
    return encodeEntries(removed)
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
