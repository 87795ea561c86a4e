import { createHash } from 'node:crypto'
import * as Y from 'yjs'

/**
 * A document's revision: the same string in every process whose copy holds the same updates, and
 * a new one after any edit. A state vector alone misses deletions; a snapshot holds them too.
 * @param {Y.Doc} ydoc
 */
export function revisionOf (ydoc) {
  return createHash('sha256').update(Y.encodeSnapshot(Y.snapshot(ydoc))).digest('base64url').slice(0, 22)
}
