import * as Y from 'yjs'
import { AppError } from '../errors.js'
import { CLOSE_REASONS, EVENTS, ROLES } from '../protocol.js'
import { checkUpdate } from '../docs/update-check.js'
import { attach, closeMembership, detach, membershipsOf } from './editors.js'
import { relayOf } from './room-relay.js'
import { binaryOf, docIdOf } from './payloads.js'
import { refusal, withAck } from './with-ack.js'
import { connectionLimits } from '../limits/limits.js'
import { invalidUpdateLimit } from './invalid-updates.js'

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
  const { registry, sessions, cluster, config, metrics, access, limits, audit } = ctx
  const logger = ctx.logger.child({ socket: socket.id })
  const ip = ctx.clientIpOf(socket.request)
  /** @type {Map<string, number>} when each refusal code was last audited */
  const audited = new Map()
  const countInvalid = invalidUpdateLimit(socket, config.maxInvalidUpdates, logger)
  /** @type {(event: string, error: import('../protocol.js').ErrorBody) => void} */
  const onRefused = (event, error) => {
    auditRefusal(event, error)
    countInvalid(event, error)
  }
  const deps = { metrics, logger, onRefused }
  const memberships = membershipsOf(socket)
  const rates = connectionLimits(config, ctx.now)
  const { relayOptions } = ctx
  const awarenessLimits = {
    maxStateBytes: config.maxAwarenessStateBytes,
    maxTotalBytes: config.maxAwarenessBytes,
    holdMs: config.awarenessIdHoldMs
  }
  /** Joins of documents not yet held that are still in flight. */
  let joining = 0

  socket.on(EVENTS.JOIN, withAck(EVENTS.JOIN, async (payload) => {
    const docId = docIdOf(payload)
    const sv = payload.sv === undefined ? undefined : binaryOf(payload, 'sv', config.maxUpdateBytes)
    if (sv) checkStateVector(sv)
    await limits.joins.take(ip)
    const joined = memberships.get(docId)
    const { doc, editors, role } = joined ? await rejoin(joined) : await admit(docId, payload.token ?? socket.handshake.auth?.token)
    return {
      update: Y.encodeStateAsUpdate(doc.ydoc, sv),
      sv: Y.encodeStateVector(doc.ydoc),
      awareness: doc.awareness.encodeAll(),
      role,
      editors,
      maxUpdateBytes: config.maxUpdateBytes
    }
  }, deps))

  /**
   * Lets the socket into a document it has not joined: the token must open it, the session exist,
   * the document load, the room have space cluster-wide, and the copy here be current.
   *
   * Joins still in flight count against `maxDocsPerSocket`: concurrent joins would otherwise all
   * pass the check before any of them is attached.
   * @param {string} docId
   * @param {unknown} token the join's own, else the handshake's
   */
  async function admit (docId, token) {
    if (memberships.size + joining >= config.maxDocsPerSocket) {
      throw new AppError('RATE_LIMITED', `a connection may hold at most ${config.maxDocsPerSocket} documents`)
    }
    joining++
    try {
      return await enter(docId, token)
    } finally {
      joining--
    }
  }

  /**
   * The socket enters the room before the state it is sent is read: from then on every update
   * reaches it either in that state or as a broadcast (both, at worst, which Yjs ignores).
   * @param {string} docId
   * @param {unknown} token
   */
  async function enter (docId, token) {
    const grant = await access.authorize(token, docId)
    const session = await sessions.record(docId)
    const doc = await registry.open(docId)
    let remote
    try {
      const local = doc.sockets.size
      const [editors] = await cluster.editorCounts([docId])
      remote = editors - local
      if (editors >= session.maxEditors) {
        throw roomFull(docId, session.maxEditors)
      }
      if (!socket.connected) throw new AppError('BAD_REQUEST', 'disconnected while joining')
    } catch (err) {
      registry.release(doc)
      throw err
    }
    // A second join of the same document may have raced this one through the awaits above.
    if (memberships.has(docId)) return rejoin(/** @type {Membership} */ (memberships.get(docId)))
    attach(socket, doc, grant, registry)
    // Joins in this process that passed the count above while it was being taken count too.
    if (remote + doc.sockets.size > session.maxEditors) {
      detach(socket, docId, registry)
      throw roomFull(docId, session.maxEditors)
    }
    // Seats are counted per connection: without this one token could open them all.
    if (config.maxConnectionsPerUser !== 0 && grant.user !== null &&
        connectionsOf(doc, grant.user) > config.maxConnectionsPerUser) {
      detach(socket, docId, registry)
      throw new AppError('RATE_LIMITED', `a user may join a document with at most ${config.maxConnectionsPerUser} connections`)
    }
    try {
      // A revocation stored while this join was on its way closed only the sockets attached by
      // then; from here on it reaches this one too. Asking again covers the time in between.
      await access.authorize(token, docId)
      await cluster.docSubscribed(docId)
      await catchUp(doc)
    } catch (err) {
      detach(socket, docId, registry)
      throw err instanceof AppError ? err : new AppError('UNAVAILABLE', 'could not join the room; retry')
    }
    // Closed while joining (deleted, revoked or expired; the socket was sent `doc:closed`).
    if (memberships.get(docId)?.doc !== doc) throw new AppError('UNAVAILABLE', `${docId} was closed while joining; retry`)
    logger.debug({ doc: docId, user: grant.user, role: grant.role }, 'joined')
    return { doc, editors: remote + doc.sockets.size, role: grant.role }
  }

  /**
   * A join of a document the socket already holds: fresh state, no second seat, and the end of a
   * membership whose token has expired.
   * @param {Membership} membership
   */
  async function rejoin ({ doc, role, expiresAtMs }) {
    if (expiresAtMs !== null && Date.now() >= expiresAtMs) {
      closeMembership(socket, doc.id, registry, CLOSE_REASONS.EXPIRED)
      throw new AppError('UNAUTHORIZED', 'the token has expired')
    }
    await catchUp(doc)
    const [editors] = await cluster.editorCounts([doc.id])
    return { doc, editors, role }
  }

  /** Another process may have stored edits a moment ago: a joiner gets them too. @param {LiveDoc} doc */
  async function catchUp (doc) {
    try {
      await doc.catchUp()
    } catch (err) {
      logger.warn({ err, doc: doc.id }, 'catch-up failed')
      throw new AppError('UNAVAILABLE', 'document could not be brought up to date; retry')
    }
  }

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
    if (doc.bytes + update.byteLength > config.maxDocBytes) {
      throw new AppError('TOO_LARGE', `the document would exceed ${config.maxDocBytes} bytes`)
    }
    try {
      checkUpdate(update, doc.ydoc, config)
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'OUT_OF_SYNC' || !doc.store.shared) throw err
      // Another process may have stored what this builds on a moment ago: its broadcast can reach
      // an editor before this copy reads the stream. Read it, then check again.
      await catchUp(doc)
      checkUpdate(update, doc.ydoc, config)
    }
    doc.bytes += update.byteLength
    try {
      Y.applyUpdate(doc.ydoc, update, socket)
    } catch (err) {
      // Some updates decode cleanly yet throw halfway through integration, leaving part of them in
      // the live document. Nothing of it was relayed or stored: reload the document from storage.
      logger.warn({ err, doc: docId }, 'update failed to apply; reloading the document')
      registry.invalidate(docId).catch(evictErr => logger.error({ err: evictErr, doc: docId }, 'evict failed'))
      throw new AppError('INVALID_UPDATE', 'update could not be applied')
    }
    // Editors in this process get the update as soon as it is applied; the ACK waits for it to be
    // stored (a peer may see an edit that storage then refuses: it sends it back when it rejoins the
    // reloaded document). Other processes learn of it from the store's feed once it is stored.
    relayOf(doc, socket.nsp, relayOptions).update(update, socket)
    try {
      await doc.persist(update)
    } catch (err) {
      // Storage health logs the failure once per interval; the copy is being reloaded (LiveDoc).
      logger.debug({ err, doc: docId }, 'update could not be stored')
      throw new AppError('UNAVAILABLE', 'the update could not be stored; retry')
    }
    metrics.updatesApplied.inc()
    metrics.updateBytes.inc(update.byteLength)
    metrics.updateDuration.observe((performance.now() - received) / 1000)
  }, deps))

  // Awareness is fire-and-forget (cursor moves are superseded by the next one), so it takes no ACK;
  // a refusal is still counted, and answered if the client did pass a callback.
  socket.on(EVENTS.AWARENESS, (payload, ack) => {
    try {
      const docId = docIdOf(payload)
      const update = binaryOf(payload, 'update', config.maxUpdateBytes)
      const membership = memberships.get(docId)
      if (!membership) throw notJoined(docId)
      rates.awareness.take()
      rates.bytes.take(update.byteLength)
      const entries = membership.doc.awareness.apply(update,
        { owner: socket, user: membership.user, announced: membership.awarenessClients }, awarenessLimits)
      relayOf(membership.doc, socket.nsp, relayOptions).awareness(entries)
      if (typeof ack === 'function') ack({ ok: true })
    } catch (err) {
      const reply = refusal(EVENTS.AWARENESS, err, metrics)
      if (err instanceof AppError) auditRefusal(EVENTS.AWARENESS, reply.error)
      else logger.error({ err }, 'awareness handler failed')
      if (typeof ack === 'function') ack(reply)
    }
  })

  /**
   * An audit line for a refusal that may mean abuse, at most once per code per interval.
   * @param {string} event
   * @param {import('../protocol.js').ErrorBody} error
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

/**
 * The connections in this process that joined `doc` as `user`.
 * @param {LiveDoc} doc
 * @param {string} user
 */
function connectionsOf (doc, user) {
  let count = 0
  for (const socket of doc.sockets) if (membershipsOf(socket).get(doc.id)?.user === user) count++
  return count
}

/** @param {Uint8Array} sv */
function checkStateVector (sv) {
  try {
    Y.decodeStateVector(sv)
  } catch {
    throw new AppError('BAD_REQUEST', '`sv` is not a Yjs state vector')
  }
}

/** @param {string} docId @param {number} maxEditors */
function roomFull (docId, maxEditors) {
  return new AppError('ROOM_FULL', `session ${docId} is full (${maxEditors} editors)`)
}

/** @param {string} docId */
function notJoined (docId) {
  return new AppError('NOT_JOINED', `join ${docId} before sending events for it`)
}
