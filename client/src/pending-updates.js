import * as Y from 'yjs'

/**
 * Local updates the server has not acknowledged yet. Each stays here until its ACK arrives, so it
 * can be sent again after a reconnect; Yjs ignores an update it has already applied, which makes
 * resending always safe.
 */
export class PendingUpdates {
  /** @type {Set<Uint8Array>} insertion order is the order to send them in: later edits build on earlier ones */
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
   * Adds what a server whose state vector is `serverSv` lacks beyond the pending updates: edits
   * from others that it lost, and the delete set. Diffing against the server's state vector alone
   * would repeat every pending update in one more update, which after long offline typing can be
   * larger than the server accepts even though each pending update is small.
   * @param {Y.Doc} ydoc
   * @param {Uint8Array} serverSv
   */
  addMissing (ydoc, serverSv) {
    const reach = Y.decodeStateVector(serverSv)
    // The server holds each client's structs from clock 0 without a gap (it refuses an update that
    // would leave one), so the pending updates extend that run only where they start inside it.
    const ranges = this.#ranges().sort((a, b) => a.clock - b.clock)
    for (const { client, clock, end } of ranges) {
      const held = reach.get(client) ?? 0
      if (clock <= held && end > held) reach.set(client, end)
    }
    this.add(Y.encodeStateAsUpdate(ydoc, Y.encodeStateVector(reach)))
  }

  /** The clock ranges the pending updates carry, per client; gaps (`Skip`) left out. */
  #ranges () {
    /** @type {{ client: number, clock: number, end: number }[]} */
    const ranges = []
    for (const update of this.#updates) {
      for (const struct of Y.decodeUpdate(update).structs) {
        if (struct instanceof Y.Skip) continue
        const { client, clock } = struct.id
        ranges.push({ client, clock, end: clock + struct.length })
      }
    }
    return ranges
  }

  /**
   * Replaces the pending updates by as few merges as fit in `maxBytes` each, in order, and returns
   * them: an hour of offline typing is then a handful of messages on reconnect instead of one per
   * keystroke, none of them refused as too large. An update that alone exceeds `maxBytes` stays a
   * message of its own. An ACK that arrives later for one of the merged parts finds nothing to
   * delete, and a merge stays pending until its own ACK.
   * @param {number} [maxBytes] the largest update the server accepts. Default: no limit.
   * @returns {Uint8Array[]}
   */
  collapse (maxBytes = Infinity) {
    const updates = [...this.#updates]
    const messages = updates.length < 2 ? updates : mergeWithin(updates, maxBytes)
    this.#updates = new Set(messages)
    return messages
  }
}

/**
 * Merges consecutive updates into groups of at most `maxBytes`. Merging everything first settles
 * the usual case in one pass; otherwise updates are grouped by their summed sizes, which a merge
 * does not exceed in practice (it drops repeated headers); a group that does is split in two.
 * @param {Uint8Array[]} updates
 * @param {number} maxBytes
 * @returns {Uint8Array[]}
 */
function mergeWithin (updates, maxBytes) {
  const all = Y.mergeUpdates(updates)
  if (all.byteLength <= maxBytes) return [all]
  /** @type {Uint8Array[]} */
  const messages = []
  /** @type {Uint8Array[]} */
  let group = []
  let bytes = 0
  for (const update of updates) {
    if (group.length > 0 && bytes + update.byteLength > maxBytes) {
      messages.push(...mergeGroup(group, maxBytes))
      group = []
      bytes = 0
    }
    group.push(update)
    bytes += update.byteLength
  }
  messages.push(...mergeGroup(group, maxBytes))
  return messages
}

/**
 * @param {Uint8Array[]} group
 * @param {number} maxBytes
 * @returns {Uint8Array[]}
 */
function mergeGroup (group, maxBytes) {
  if (group.length === 1) return group
  const merged = Y.mergeUpdates(group)
  if (merged.byteLength <= maxBytes) return [merged]
  const half = Math.ceil(group.length / 2)
  return [...mergeGroup(group.slice(0, half), maxBytes), ...mergeGroup(group.slice(half), maxBytes)]
}
