import * as Y from 'yjs'
import { acceptUpdate } from '../docs/accept-update.js'
import { AppError } from '../errors.js'
import { connectionLimits } from '../limits/limits.js'
import { EVENTS, ROLES } from '../../isomorphic/events.js'
import { detach, membershipsOf } from './editors.js'
import { invalidUpdateLimit } from './invalid-updates.js'
import { checkStateVector, joiner } from './join.js'
import { binaryOf, docIdOf } from './payloads.js'
import { relayOf } from './room-relay.js'
import { dropIfSlow } from './slow-consumers.js'
import { withAck } from './with-ack.js'

/**
 * @typedef {import('../docs/live-doc.js').LiveDoc} LiveDoc
 * @typedef {import('./editors.js').Membership} Membership
 */

/**
 * @typedef {object} RealtimeContext
 * @property {import('../docs/doc-registry.js').DocRegistry} registry
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

/**
 * The document events of one connection: join, leave, update, awareness (docs/PROTOCOL.md).
 * @param {import('socket.io').Socket} socket
 * @param {RealtimeContext} ctx
 */
export function registerDocHandlers (socket, ctx) {
  const { registry, config, metrics, limits, audit } = ctx
  const logger = ctx.logger.child({ socket: socket.id })
  const ip = ctx.clientIpOf(socket.request)
  /** @type {Map<string, number>} when each refusal code was last audited */
  const audited = new Map()
  const countInvalid = invalidUpdateLimit(socket, config.maxInvalidUpdates, logger)
  /** @type {(event: string, error: import('../../isomorphic/error-codes.js').ErrorBody) => void} */
  const onRefused = (event, error) => {
    auditRefusal(event, error)
    countInvalid(event, error)
  }
  const deps = { metrics, logger, onRefused }
  const memberships = membershipsOf(socket)
  const rates = connectionLimits(config, ctx.now)
  const { relayOptions } = ctx
  const slowConsumers = { maxBufferedBytes: config.maxBufferedBytes, metrics, audit }
  // Bytes of join replies built but not yet handed to Engine.IO (each goes out a moment after it
  // is built): joins that arrive together are all built before the first is sent.
  let unsentReplyBytes = 0
  const awarenessLimits = {
    maxStateBytes: config.maxAwarenessStateBytes,
    maxTotalBytes: config.maxAwarenessBytes,
    holdMs: config.awarenessIdHoldMs
  }
  const join = joiner(socket, ctx, logger)
  const acceptDeps = { config, registry, logger }

  socket.on(EVENTS.JOIN, withAck(EVENTS.JOIN, async (payload) => {
    const docId = docIdOf(payload)
    const sv = payload.sv === undefined ? undefined : binaryOf(payload, 'sv', config.maxUpdateBytes)
    if (sv) checkStateVector(sv)
    await limits.joins.take(ip)
    const { doc, editors, role } = await join(docId, payload.token ?? socket.handshake.auth?.token)
    // A reply holds the whole document: a client that asks for it again and again without reading
    // what it is sent would have the server queue copies faster than the timer of slow consumers
    // looks (hundreds in one turn of the event loop). Only what waits already counts, so one reply
    // larger than the limit still goes to a client that reads.
    if (dropIfSlow(socket.conn, unsentReplyBytes, slowConsumers)) {
      throw new AppError('RATE_LIMITED', 'the connection does not read what it is sent')
    }
    const update = Y.encodeStateAsUpdate(doc.ydoc, sv)
    unsentReplyBytes += update.byteLength
    setImmediate(() => { unsentReplyBytes -= update.byteLength })
    return {
      update,
      sv: Y.encodeStateVector(doc.ydoc),
      awareness: doc.awareness.encodeAll(),
      role,
      editors,
      maxUpdateBytes: config.maxUpdateBytes
    }
  }, deps))

  socket.on(EVENTS.LEAVE, withAck(EVENTS.LEAVE, (payload) => {
    const docId = docIdOf(payload)
    if (!detach(socket, docId, registry)) throw notJoined(docId)
  }, deps))

  socket.on(EVENTS.UPDATE, withAck(EVENTS.UPDATE, async (payload) => {
    const received = performance.now()
    const docId = docIdOf(payload)
    const update = binaryOf(payload, 'update', config.maxUpdateBytes)
    const membership = memberships.get(docId)
    if (!membership) throw notJoined(docId)
    if (membership.role === ROLES.VIEWER) throw new AppError('FORBIDDEN', 'viewers cannot edit')
    rates.updates.take()
    rates.bytes.take(update.byteLength)
    const { doc } = membership
    await acceptUpdate(doc, update, socket, relayOf(doc, socket.nsp, relayOptions), acceptDeps)
    metrics.updatesApplied.inc()
    metrics.updateBytes.inc(update.byteLength)
    metrics.updateDuration.observe((performance.now() - received) / 1000)
  }, deps))

  socket.on(EVENTS.AWARENESS, withAck(EVENTS.AWARENESS, (payload) => {
    const docId = docIdOf(payload)
    const update = binaryOf(payload, 'update', config.maxUpdateBytes)
    const membership = memberships.get(docId)
    if (!membership) throw notJoined(docId)
    rates.awareness.take()
    rates.bytes.take(update.byteLength)
    const entries = membership.doc.awareness.apply(update,
      { owner: socket, user: membership.user, announced: membership.awarenessClients }, awarenessLimits)
    relayOf(membership.doc, socket.nsp, relayOptions).awareness(entries)
  }, deps, { optional: true }))

  /**
   * An audit line for a refusal that may mean abuse, at most once per code per interval.
   * @param {string} event
   * @param {import('../../isomorphic/error-codes.js').ErrorBody} error
   */
  function auditRefusal (event, error) {
    if (!AUDITED.has(error.code)) return
    const now = Date.now()
    if (now - (audited.get(error.code) ?? -Infinity) < AUDIT_INTERVAL_MS) return
    audited.set(error.code, now)
    const users = [...memberships.values()].map(membership => membership.user).filter(user => user !== null)
    audit.refused(event, { ip, socket: socket.id, users: [...new Set(users)], code: error.code, reason: error.message })
  }

  socket.on('disconnect', () => {
    for (const docId of [...memberships.keys()]) detach(socket, docId, registry)
  })
}

/** @param {string} docId */
function notJoined (docId) {
  return new AppError('NOT_JOINED', `join ${docId} before sending events for it`)
}
