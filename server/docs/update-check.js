import * as Y from 'yjs'
import { AppError } from '../errors.js'

/**
 * Refuses bytes that are not a Yjs update, or an update this document cannot integrate, before it
 * reaches the live document. Decoding parses every struct and the delete set, so truncated or
 * garbage input throws here instead of half-applying.
 *
 * An update whose structs start past what the document has from their client, or point (origin,
 * right origin, parent) at items it lacks, would not be integrated: Yjs would hold it as pending, in
 * memory and in the stored log, for as long as the missing part never comes. It is refused as
 * OUT_OF_SYNC instead; an honest client rejoins and sends the whole difference.
 * @param {Uint8Array} update
 * @param {Y.Doc} ydoc
 */
export function checkUpdate (update, ydoc) {
  let structs
  try {
    ({ structs } = Y.decodeUpdate(update))
  } catch {
    throw new AppError('INVALID_UPDATE', 'update is not a valid Yjs update')
  }
  // What the document will hold of each client once this update is in (its structs are grouped by
  // client in ascending clock order); only then are references checked, since they may point
  // forward into the same update.
  /** @type {Map<number, number>} */
  const next = new Map()
  /** @param {number} client */
  const nextClock = client => next.get(client) ?? Y.getState(ydoc.store, client)
  for (const struct of structs) {
    if (struct instanceof Y.Skip) continue
    const { client, clock } = struct.id
    const have = nextClock(client)
    if (clock > have) throw outOfSync()
    next.set(client, Math.max(have, clock + struct.length))
  }
  /** @param {Y.ID | null} id */
  const missing = id => id !== null && id.clock >= nextClock(id.client)
  for (const struct of structs) {
    if (!(struct instanceof Y.Item)) continue
    const parent = struct.parent instanceof Y.ID ? struct.parent : null
    if (missing(struct.origin) || missing(struct.rightOrigin) || missing(parent)) throw outOfSync()
  }
}

function outOfSync () {
  return new AppError('OUT_OF_SYNC', 'the update builds on changes the server does not have; join again to resync')
}
