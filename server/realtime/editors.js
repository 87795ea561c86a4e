import { EVENTS } from '../protocol.js'

// Which socket holds which document, kept on both sides: the socket's memberships (what it joined,
// its role and the awareness client ids it announced) and `doc.sockets` (who is editing). Every
// join and leave goes through here so the two never disagree. Memberships live in a WeakMap rather
// than `socket.data`, which Socket.IO serialises when other processes fetch sockets.

/** @typedef {{ doc: import('../docs/live-doc.js').LiveDoc, role: string, awarenessClients: Set<number> }} Membership */

/** @param {string} docId */
export const roomOf = docId => `doc:${docId}`

/** @type {WeakMap<import('socket.io').Socket, Map<string, Membership>>} */
const memberships = new WeakMap()

/**
 * @param {import('socket.io').Socket} socket
 * @returns {Map<string, Membership>}
 */
export function membershipsOf (socket) {
  let docs = memberships.get(socket)
  if (!docs) {
    docs = new Map()
    memberships.set(socket, docs)
  }
  return docs
}

/**
 * @param {import('socket.io').Socket} socket
 * @param {import('../docs/live-doc.js').LiveDoc} doc
 * @param {string} role
 */
export function attach (socket, doc, role) {
  membershipsOf(socket).set(doc.id, { doc, role, awarenessClients: new Set() })
  doc.sockets.add(socket)
  socket.join(roomOf(doc.id))
}

/**
 * Takes a socket out of a document; tells the remaining editors its cursors are gone.
 * @param {import('socket.io').Socket} socket
 * @param {string} docId
 * @param {import('../docs/doc-registry.js').DocRegistry} registry
 * @returns {boolean} whether the socket had joined the document
 */
export function detach (socket, docId, registry) {
  const memberships = membershipsOf(socket)
  const membership = memberships.get(docId)
  if (!membership) return false
  const { doc, awarenessClients } = membership
  memberships.delete(docId)
  doc.sockets.delete(socket)
  socket.leave(roomOf(docId))
  if (awarenessClients.size > 0) {
    const removal = doc.awareness.remove(awarenessClients)
    socket.to(roomOf(docId)).emit(EVENTS.AWARENESS, { doc: docId, update: removal })
  }
  registry.release(doc)
  return true
}

/**
 * Closes a document for every editor in this process: each gets `doc:closed` and leaves the room.
 * @param {import('../docs/doc-registry.js').DocRegistry} registry
 * @param {string} docId
 * @param {string} reason
 */
export function closeForEditors (registry, docId, reason) {
  const doc = registry.get(docId)
  if (!doc) return
  for (const socket of [...doc.sockets]) {
    socket.emit(EVENTS.CLOSED, { doc: docId, reason })
    detach(socket, docId, registry)
  }
}
