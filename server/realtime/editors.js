import { CLOSE_REASONS, EVENTS } from '../../isomorphic/events.js'
import { callAt } from './deadline.js'
import { forgetAwareness, roomOf } from './room-relay.js'
/** @import { Socket } from 'socket.io' */
/** @import { DocRegistry } from '../documents/doc-registry.js' */
/** @import { LiveDoc } from '../documents/live-doc.js' */

// Which socket holds which document, on both sides: the socket's memberships and `doc.sockets`. Every
// join and leave goes through here so the two never disagree. A WeakMap, not `socket.data`, which
// Socket.IO serialises when other processes fetch sockets.

/**
 * @typedef {import('../auth/access.js').Membership & {
 *   doc: LiveDoc, awarenessClients: Set<number>, cancelExpiry: () => void, seats: Seats }} Membership
 */

/** @typedef {{ tokenId?: string, user?: string }} Revoked */
/** @typedef {Pick<import('../storage/seats.js').Seats, 'free'>} Seats */

const NO_EXPIRY = () => {}

/** @type {WeakMap<Socket, Map<string, Membership>>} */
const memberships = new WeakMap()

/** @param {Socket} socket @returns {Map<string, Membership>} */
export function membershipsOf (socket) {
  let docs = memberships.get(socket)
  if (!docs) {
    docs = new Map()
    memberships.set(socket, docs)
  }
  return docs
}

/**
 * Puts a socket in a document, in the seat its join took, until its token expires (`doc:closed`,
 * `expired`): a token checked only at join would work as long as the connection lasts.
 * @param {Socket} socket @param {LiveDoc} doc @param {import('../auth/access.js').Membership} access
 * @param {DocRegistry} registry @param {Seats} seats where the seat goes back
 */
export function attach (socket, doc, { role, user, tokenId, expiresAtMs }, registry, seats) {
  const cancelExpiry = expiresAtMs === null
    ? NO_EXPIRY
    : callAt(expiresAtMs, () => closeMembership(socket, doc.id, registry, CLOSE_REASONS.EXPIRED))
  membershipsOf(socket).set(doc.id, { doc, role, user, tokenId, expiresAtMs, awarenessClients: new Set(), cancelExpiry, seats })
  doc.sockets.add(socket)
  socket.join(roomOf(doc.id))
}

/**
 * @param {Socket} socket @param {string} docId @param {DocRegistry} registry
 * @param {string} reason one of CLOSE_REASONS, sent in `doc:closed`
 */
export function closeMembership (socket, docId, registry, reason) {
  if (!membershipsOf(socket).has(docId)) return
  socket.emit(EVENTS.CLOSED, { doc: docId, reason })
  detach(socket, docId, registry)
}

/**
 * Takes a socket out of a document (false if it had not joined); its cursors vanish for the others.
 * @param {Socket} socket @param {string} docId @param {DocRegistry} registry
 */
export function detach (socket, docId, registry) {
  const memberships = membershipsOf(socket)
  const membership = memberships.get(docId)
  if (!membership) return false
  const { doc, awarenessClients } = membership
  membership.cancelExpiry()
  membership.seats.free(docId, membership)
  memberships.delete(docId)
  doc.sockets.delete(socket)
  socket.leave(roomOf(docId))
  if (awarenessClients.size > 0) {
    const removal = doc.awareness.remove(awarenessClients, socket)
    forgetAwareness(doc, awarenessClients)
    if (removal) socket.to(roomOf(docId)).emit(EVENTS.AWARENESS, { doc: docId, update: removal })
  }
  registry.release(doc)
  return true
}

/**
 * Closes a document for every editor in this process.
 * @param {DocRegistry} registry @param {string} docId @param {string} reason
 */
export function closeForEditors (registry, docId, reason) {
  closeFor(registry, docId, reason, () => true)
}

/**
 * Closes a document for the sockets here that joined with a revoked token.
 * @param {DocRegistry} registry @param {string} docId @param {Revoked} revoked
 */
export function closeForHolders (registry, docId, { tokenId, user }) {
  closeFor(registry, docId, CLOSE_REASONS.REVOKED, membership =>
    (tokenId !== undefined && membership.tokenId === tokenId) || (user !== undefined && membership.user === user))
}

/**
 * @param {DocRegistry} registry @param {string} docId @param {string} reason
 * @param {(membership: Membership) => boolean} selected
 */
function closeFor (registry, docId, reason, selected) {
  const doc = registry.get(docId)
  if (!doc) return
  for (const socket of [...doc.sockets]) {
    const membership = membershipsOf(socket).get(docId)
    if (!membership || !selected(membership)) continue
    closeMembership(socket, docId, registry, reason)
  }
}
