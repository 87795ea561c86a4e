import { randomBytes } from 'node:crypto'
import * as Y from 'yjs'
/** @import { LiveDoc } from './live-doc.js' */

// Which Yjs client id the edits a server makes to a document (text-edit.js) go under.

/** Documents whose last edit here is remembered; past it the one edited longest ago is forgotten. */
const MAX_REMEMBERED_DOCS = 10_000

/** @type {WeakMap<LiveDoc, number>} the client id of each copy's edits */
const copyClients = new WeakMap()
/**
 * Per server (its store stands for it: servers built in one process must not share ids), per
 * document: the id of the last edit made there and its clock after it, least recent first.
 * @type {WeakMap<import('../storage/doc-store.js').DocStore, Map<string, { clientId: number, clock: number }>>}
 */
const lastMadeByServer = new WeakMap()

/** @param {LiveDoc} doc */
function lastMadeOf (doc) {
  let lastMade = lastMadeByServer.get(doc.store)
  if (!lastMade) lastMadeByServer.set(doc.store, lastMade = new Map())
  return lastMade
}

/**
 * The Yjs client id of the edits a copy makes. One id must never name two diverging histories, so
 * other servers' copies never share one; and every id stays in the document's state vector for
 * good, so it is not one per edit, nor one per load: a later copy in this server takes up the id
 * of the last edit made there if it holds everything made under it, else (an edit applied but
 * never stored, which editors may hold) a new one.
 * @param {LiveDoc} doc
 */
export function editClientOf (doc) {
  let clientId = copyClients.get(doc)
  if (clientId !== undefined) return clientId
  const { store } = doc.ydoc
  const last = lastMadeOf(doc).get(doc.id)
  if (last !== undefined && Y.getState(store, last.clientId) === last.clock) {
    clientId = last.clientId
  } else {
    do {
      clientId = randomBytes(4).readUInt32BE()
    } while (store.clients.has(clientId))
  }
  copyClients.set(doc, clientId)
  return clientId
}

/**
 * The clock an edit leaves its id at, remembered before it is taken: one refused later still
 * counts, so a copy that lacks it will not reuse the id.
 * @param {LiveDoc} doc @param {number} clientId @param {Uint8Array} update
 */
export function rememberEdit (doc, clientId, update) {
  const clock = Y.parseUpdateMeta(update).to.get(clientId) ?? Y.getState(doc.ydoc.store, clientId)
  const lastMade = lastMadeOf(doc)
  lastMade.delete(doc.id)
  lastMade.set(doc.id, { clientId, clock })
  if (lastMade.size > MAX_REMEMBERED_DOCS) lastMade.delete(/** @type {string} */ (lastMade.keys().next().value))
}
