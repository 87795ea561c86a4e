import * as Y from 'yjs'
import { acceptUpdate } from '../documents/accept-update.js'
import { AppError } from '../errors.js'
import { connectionLimits } from '../limits/limits.js'
import { EVENTS, ROLES } from '../../isomorphic/events.js'
import { detach, membershipsOf } from './editors.js'
import { checkStateVector, Joiner } from './join.js'
import { binaryOf, docIdOf } from './payloads.js'
import { relayOf } from './room-relay.js'
import { dropIfSlow } from './slow-consumers.js'
import { withAck } from './with-ack.js'
/** @import { Socket } from 'socket.io' */
/** @import { ErrorBody } from '../../isomorphic/error-codes.js' */

/**
 * @typedef {object} RealtimeContext
 * @property {import('../documents/doc-registry.js').DocRegistry} registry
 * @property {import('../sessions/session-service.js').SessionService} sessions
 * @property {import('./cluster.js').Cluster} cluster
 * @property {import('../config.js').Config} config
 * @property {import('../metrics.js').Metrics} metrics
 * @property {import('pino').Logger} logger
 * @property {import('../auth/access.js').Access} access
 * @property {import('../limits/limits.js').Limits} limits
 * @property {import('../audit.js').Audit} audit
 * @property {import('./room-relay.js').RelayOptions} relayOptions
 * @property {(req: import('node:http').IncomingMessage) => string} clientIpOf
 * @property {() => number} [now] the clock of the per-connection rates, in ms (tests move it by hand)
 */

// Refusals worth an audit line; a flood is audited once per code per connection per interval.
const AUDITED = new Set(['UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'TOO_LARGE', 'INVALID_UPDATE', 'OUT_OF_SYNC'])
const AUDIT_INTERVAL_MS = 10_000

/** @type {WeakMap<Socket, Connection>} */
const connections = new WeakMap()

// What the document events know of one connection. The handlers are one set for every socket
// (called with the socket as `this`): closures per connection cost each idle editor heap
// (docs/PERFORMANCE.md, "One set of handlers for every connection").
class Connection {
  /** Updates refused as INVALID_UPDATE. */
  #invalidUpdates = 0
  /** @type {Map<string, number> | null} when each refusal code was last audited */
  #audited = null

  /** @param {Socket} socket @param {RealtimeContext} ctx */
  constructor (socket, ctx) {
    this.socket = socket
    this.ctx = ctx
    this.logger = ctx.logger.child({ socket: socket.id })
    this.ip = ctx.clientIpOf(socket.request)
    this.memberships = membershipsOf(socket)
    this.rates = connectionLimits(ctx.config, ctx.now)
    this.joiner = new Joiner(this)
    /** @type {import('../documents/live-doc.js').UpdateSource} what its updates come from, made once */
    this.source = { sender: socket }
    // Join replies built but not yet handed to Engine.IO: joins that arrive together are built first.
    this.unsentReplyBytes = 0
  }

  /**
   * Audits refusals that may mean abuse, and closes a connection after `maxInvalidUpdates` INVALID_UPDATE
   * (0: never): an honest client sends none, and each costs a full decode.
   * @param {string} event @param {ErrorBody} error
   */
  refused (event, error) {
    this.#audit(event, error)
    const { maxInvalidUpdates } = this.ctx.config
    if (maxInvalidUpdates === 0 || event !== EVENTS.UPDATE || error.code !== 'INVALID_UPDATE') return
    this.#invalidUpdates++
    if (this.#invalidUpdates !== maxInvalidUpdates) return
    this.logger.warn({ invalid: this.#invalidUpdates }, 'closing a connection that keeps sending invalid updates')
    // After the refusal's ACK has gone out.
    setImmediate(() => this.socket.disconnect(true))
  }

  /** At most once per code per interval. @param {string} event @param {ErrorBody} error */
  #audit (event, error) {
    if (!AUDITED.has(error.code)) return
    const now = Date.now()
    this.#audited ??= new Map()
    if (now - (this.#audited.get(error.code) ?? -Infinity) < AUDIT_INTERVAL_MS) return
    this.#audited.set(error.code, now)
    const users = [...this.memberships.values()].map(membership => membership.user).filter(user => user !== null)
    this.ctx.audit.refused(event, { ip: this.ip, socket: this.socket.id, users: [...new Set(users)], code: error.code, reason: error.message })
  }
}

/** @param {Socket} socket */
const connectionOf = socket => /** @type {Connection} */ (connections.get(socket))

/**
 * The document events (docs/PROTOCOL.md); returns what to call on each new connection.
 * @param {RealtimeContext} ctx @returns {(socket: Socket) => void}
 */
export function docHandlers (ctx) {
  const { registry, config, metrics, relayOptions } = ctx
  const deps = { metrics, connectionOf }
  const slowConsumers = { maxBufferedBytes: config.maxBufferedBytes, metrics, audit: ctx.audit }
  const awarenessLimits = {
    maxStateBytes: config.maxAwarenessStateBytes,
    maxTotalBytes: config.maxAwarenessBytes,
    maxUserBytes: config.maxAwarenessBytesPerUser,
    maxUserIds: config.maxAwarenessIdsPerUser,
    holdMs: config.awarenessIdHoldMs
  }
  const acceptDeps = { config }

  const onJoin = withAck(EVENTS.JOIN, async (/** @type {Connection} */ connection, payload) => {
    const { socket } = connection
    const docId = docIdOf(payload)
    const sv = payload.sv === undefined ? undefined : binaryOf(payload, 'sv', config.maxUpdateBytes)
    // Limited and counted before anything is decoded or looked up, refused or not.
    await ctx.limits.joins.take(connection.ip)
    if (sv) {
      connection.rates.bytes.take(sv.byteLength)
      checkStateVector(sv, config.maxDocClients)
    }
    const { doc, editors, role } = await connection.joiner.join(docId, payload.token ?? socket.handshake.auth?.token)
    // A reply holds the whole document: a client asking again and again without reading would have
    // the server queue copies faster than the slow-consumer timer looks. Only what is queued counts.
    if (dropIfSlow(socket.conn, connection.unsentReplyBytes, slowConsumers)) {
      throw new AppError('RATE_LIMITED', 'the connection does not read what it is sent')
    }
    const update = Y.encodeStateAsUpdate(doc.ydoc, sv)
    connection.unsentReplyBytes += update.byteLength
    setImmediate(() => { connection.unsentReplyBytes -= update.byteLength })
    return {
      update,
      sv: Y.encodeStateVector(doc.ydoc),
      awareness: doc.awareness.encodeAll(),
      role,
      editors,
      maxUpdateBytes: config.maxUpdateBytes
    }
  }, deps)

  const onLeave = withAck(EVENTS.LEAVE, (/** @type {Connection} */ connection, payload) => {
    const docId = docIdOf(payload)
    if (!detach(connection.socket, docId, registry)) throw notJoined(docId)
  }, deps)

  const onUpdate = withAck(EVENTS.UPDATE, async (/** @type {Connection} */ connection, payload) => {
    const received = performance.now()
    const docId = docIdOf(payload)
    const update = binaryOf(payload, 'update', config.maxUpdateBytes)
    const membership = connection.memberships.get(docId)
    if (!membership) throw notJoined(docId)
    if (membership.role === ROLES.VIEWER) throw new AppError('FORBIDDEN', 'viewers cannot edit')
    connection.rates.updates.take()
    connection.rates.bytes.take(update.byteLength)
    await acceptUpdate(membership.doc, update, connection.source, acceptDeps, connection.logger)
    metrics.updatesApplied.inc()
    metrics.updateBytes.inc(update.byteLength)
    metrics.updateDuration.observe((performance.now() - received) / 1000)
  }, deps)

  const onAwareness = withAck(EVENTS.AWARENESS, (/** @type {Connection} */ connection, payload) => {
    const docId = docIdOf(payload)
    const update = binaryOf(payload, 'update', config.maxUpdateBytes)
    const membership = connection.memberships.get(docId)
    if (!membership) throw notJoined(docId)
    connection.rates.awareness.take()
    connection.rates.bytes.take(update.byteLength)
    const { socket } = connection
    const entries = membership.doc.awareness.apply(update,
      { owner: socket, user: membership.user, announced: membership.awarenessClients }, awarenessLimits)
    relayOf(membership.doc, socket.nsp, relayOptions).awareness(entries)
  }, deps, { optional: true })

  /** @this {Socket} */
  function onDisconnect () {
    for (const docId of [...membershipsOf(this).keys()]) detach(this, docId, registry)
  }

  return (socket) => {
    connections.set(socket, new Connection(socket, ctx))
    socket.on(EVENTS.JOIN, onJoin)
    socket.on(EVENTS.LEAVE, onLeave)
    socket.on(EVENTS.UPDATE, onUpdate)
    socket.on(EVENTS.AWARENESS, onAwareness)
    socket.on('disconnect', onDisconnect)
  }
}

/** @param {string} docId */
function notJoined (docId) {
  return new AppError('NOT_JOINED', `join ${docId} before sending events for it`)
}
