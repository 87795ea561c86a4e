import * as decoding from 'lib0/decoding'
import * as Y from 'yjs'
import { AppError } from '../errors.js'
import { CLOSE_REASONS } from '../../isomorphic/events.js'
import { catchUp } from '../documents/accept-update.js'
import { attach, closeMembership, detach } from './editors.js'
/** @import { LiveDoc } from '../documents/live-doc.js' */
/** @import { Membership } from './editors.js' */

/** @typedef {{ doc: LiveDoc, editors: number, role: string }} Joined */

/**
 * How one connection joins documents: `join` lets it into a document, or refreshes one it holds, and
 * resolves with the document, the editors cluster-wide and the role; the reply is the handler's.
 */
export class Joiner {
  /** Joins of documents not held yet, still in flight. */
  #joining = 0

  /**
   * @param {{ socket: import('socket.io').Socket, ctx: import('./doc-handlers.js').RealtimeContext, logger: import('pino').Logger, memberships: Map<string, Membership> }} connection
   */
  constructor (connection) {
    this.connection = connection
  }

  /** @param {string} docId @param {unknown} token the join's own, else the handshake's @returns {Promise<Joined>} */
  async join (docId, token) {
    const joined = this.connection.memberships.get(docId)
    return joined ? this.#rejoin(joined) : this.#admit(docId, token)
  }

  /**
   * Joins in flight count against `maxDocsPerSocket`, or concurrent ones would all pass the check.
   * @param {string} docId @param {unknown} token
   */
  async #admit (docId, token) {
    const { maxDocsPerSocket } = this.connection.ctx.config
    if (this.connection.memberships.size + this.#joining >= maxDocsPerSocket) {
      throw new AppError('RATE_LIMITED', `a connection may hold at most ${maxDocsPerSocket} documents`)
    }
    this.#joining++
    try {
      return await this.#enter(docId, token)
    } finally {
      this.#joining--
    }
  }

  /**
   * Token, session, load, seat (taken cluster-wide in one step), then a current copy. The socket enters
   * the room before its state is read, so every update reaches it in that state or as a broadcast
   * (both, at worst, which Yjs ignores).
   * @param {string} docId @param {unknown} token @returns {Promise<Joined>}
   */
  async #enter (docId, token) {
    const { socket, memberships, logger, ctx } = this.connection
    const { registry, sessions, cluster, access } = ctx
    const grant = await access.authorize(token, docId)
    const session = await sessions.record(docId)
    const doc = await registry.open(docId)
    let editors
    try {
      editors = await this.#takeSeat(docId, grant, session.maxEditors)
    } catch (err) {
      registry.release(doc)
      throw err
    }
    // A second join of the same document may have raced this one through the awaits above.
    const raced = memberships.get(docId)
    if (raced || !socket.connected) {
      cluster.seats.free(docId, grant)
      registry.release(doc)
      if (raced) return this.#rejoin(raced)
      throw new AppError('BAD_REQUEST', 'disconnected while joining')
    }
    // A copy dropped meanwhile: a socket attached to it now would hear from no one.
    if (registry.get(docId) !== doc) {
      cluster.seats.free(docId, grant)
      throw droppedWhileJoining(docId)
    }
    attach(socket, doc, grant, registry, cluster.seats)
    try {
      // A revocation stored during the join closed only the sockets attached by then: ask again.
      await access.authorize(token, docId)
      // Subscribed only while the copy is the registry's: one made after it was dropped leaks.
      if (memberships.get(docId)?.doc !== doc || registry.get(docId) !== doc) throw droppedWhileJoining(docId)
      await cluster.docSubscribed(docId)
      await catchUp(doc, logger)
    } catch (err) {
      detach(socket, docId, registry)
      throw err instanceof AppError ? err : new AppError('UNAVAILABLE', 'could not join the room; retry')
    }
    // Closed while joining (deleted, revoked, expired or reloaded; the socket was sent `doc:closed`).
    if (memberships.get(docId)?.doc !== doc || registry.get(docId) !== doc) {
      detach(socket, docId, registry)
      throw droppedWhileJoining(docId)
    }
    logger.debug({ doc: docId, user: grant.user, role: grant.role }, 'joined')
    return { doc, editors, role: grant.role }
  }

  /**
   * Resolves to the session's editors, with this one if it is an editor.
   * @param {string} docId @param {import('../storage/seats.js').Holder} holder @param {number} maxEditors
   */
  async #takeSeat (docId, holder, maxEditors) {
    const { cluster, config: { maxConnectionsPerUser } } = this.connection.ctx
    let taken
    try {
      taken = await cluster.seats.take(docId, holder, { maxEditors, maxPerUser: maxConnectionsPerUser })
    } catch (err) {
      // Redis is down: its health check says so; a line per refused join would flood the log.
      this.connection.logger.debug({ err, doc: docId }, 'could not take a seat')
      throw new AppError('UNAVAILABLE', 'could not take a seat in the session; retry')
    }
    if ('editors' in taken) return taken.editors
    if (taken.full === 'editors') throw roomFull(docId, maxEditors)
    throw new AppError('RATE_LIMITED', `a user may join a document with at most ${maxConnectionsPerUser} connections`)
  }

  /** Fresh state, no second seat; ends a membership whose token has expired. @param {Membership} membership */
  async #rejoin ({ doc, role, expiresAtMs }) {
    const { socket, logger, ctx: { registry, cluster } } = this.connection
    if (expiresAtMs !== null && Date.now() >= expiresAtMs) {
      closeMembership(socket, doc.id, registry, CLOSE_REASONS.EXPIRED)
      throw new AppError('UNAUTHORIZED', 'the token has expired')
    }
    if (registry.get(doc.id) !== doc) {
      detach(socket, doc.id, registry)
      throw droppedWhileJoining(doc.id)
    }
    await catchUp(doc, logger)
    const [editors] = await cluster.editorCounts([doc.id])
    return { doc, editors, role }
  }
}

/**
 * Refuses what is not a state vector, or one of more clients than a document may hold (read from
 * its first number, before decoding the rest). @param {Uint8Array} sv @param {number} maxDocClients
 */
export function checkStateVector (sv, maxDocClients) {
  try {
    if (decoding.readVarUint(decoding.createDecoder(sv)) > maxDocClients) {
      throw new AppError('BAD_REQUEST', `\`sv\` names more than ${maxDocClients} clients, more than a document may hold`)
    }
    Y.decodeStateVector(sv)
  } catch (err) {
    if (err instanceof AppError) throw err
    throw new AppError('BAD_REQUEST', '`sv` is not a Yjs state vector')
  }
}

/** @param {string} docId */
function droppedWhileJoining (docId) {
  return new AppError('UNAVAILABLE', `${docId} was closed or reloaded while joining; retry`)
}

/** @param {string} docId @param {number} maxEditors */
function roomFull (docId, maxEditors) {
  return new AppError('ROOM_FULL', `session ${docId} is full (${maxEditors} editors)`)
}
