import * as Y from 'yjs'
import { TEXT_NAME } from '../../isomorphic/events.js'

/**
 * The update a change of `doc`'s text makes, as its editor would send it (only what the change
 * wrote and deleted, where `Y.encodeStateAsUpdate` would carry every deletion the document holds).
 * @param {Y.Doc} doc
 * @param {(text: Y.Text) => void} change
 */
export function updateOf (doc, change) {
  /** @type {Uint8Array[]} */
  const updates = []
  const record = (/** @type {Uint8Array} */ update) => updates.push(update)
  doc.on('update', record)
  doc.transact(() => change(doc.getText(TEXT_NAME)))
  doc.off('update', record)
  return Y.mergeUpdates(updates)
}
