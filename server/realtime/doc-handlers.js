import * as Y from 'yjs'
import { AppError } from '../errors.js'
import { CLOSE_REASONS, EVENTS, ROLES } from '../protocol.js'
import { checkUpdate } from '../docs/update-check.js'
import { attach, closeForEditors, detach, membershipsOf, roomOf } from './editors.js'
import { binaryOf, docIdOf } from './payloads.js'
import { refusal, withAck } from './with-ack.js'

/**
 * @typedef {import('../docs/live-doc.js').LiveDoc} LiveDoc
 */

/**
 * @typedef {object} RealtimeContext
 * @property {import('../docs/doc-registry.js').DocRegistry} registry
 * @property {import('../sessions/session-service.js').SessionService} sessions
 * @property {import('./cluster.js').Cluster} cluster
 * @property {import('../config.js').Config} config
 * @property {import('../metrics.js').Metrics} metrics
 * @property {import('pino').Logger} logger
 */

/**
 * The document events of one connection: join, leave, update, awareness (docs/PROTOCOL.md).
 * @param {import('socket.io').Socket} socket
 * @param {RealtimeContext} ctx
 */
export function registerDocHandlers (socket, ctx) {
  const { registry, sessions, cluster, config, metrics } = ctx
  const logger = ctx.logger.child({ socket: socket.id })
  const deps = { metrics, logger }
  const memberships = membershipsOf(socket)

  socket.on(EVENTS.JOIN, withAck(EVENTS.JOIN, async (payload) => {
    const docId = docIdOf(payload)
    const sv = payload.sv === undefined ? undefined : binaryOf(payload, 'sv', config.maxUpdateBytes)
    if (sv) checkStateVector(sv)
    const joined = memberships.get(docId)
    const { doc, editors } = joined ? await rejoin(joined.doc) : await admit(docId)
    return {
      update: Y.encodeStateAsUpdate(doc.ydoc, sv),
      sv: Y.encodeStateVector(doc.ydoc),
      awareness: doc.awareness.encodeAll(),
      role: ROLES.EDITOR,
      editors
    }
  }, deps))

  /**
   * Lets the socket into a document it has not joined: the session must exist, the document load,
   * the room have space cluster-wide, and the copy here be current.
   * @param {string} docId
   */
  async function admit (docId) {
    if (memberships.size >= config.maxDocsPerSocket) {
      throw new AppError('RATE_LIMITED', `a connection may hold at most ${config.maxDocsPerSocket} documents`)
    }
    const session = await sessions.record(docId)
    const doc = await registry.open(docId)
    try {
      const [editors] = await cluster.editorCounts([docId])
      if (editors >= session.maxEditors) {
        throw new AppError('ROOM_FULL', `session ${docId} is full (${session.maxEditors} editors)`)
      }
      await catchUp(doc)
      if (!socket.connected) throw new AppError('BAD_REQUEST', 'disconnected while joining')
      // A second join of the same document may have raced this one through the awaits above.
      if (!memberships.has(docId)) {
        attach(socket, doc, ROLES.EDITOR)
        logger.debug({ doc: docId }, 'joined')
      }
      return { doc, editors: editors + 1 }
    } catch (err) {
      registry.release(doc)
      throw err
    }
  }

  /** A join of a document the socket already holds: fresh state, no second seat. @param {LiveDoc} doc */
  async function rejoin (doc) {
    await catchUp(doc)
    const [editors] = await cluster.editorCounts([doc.id])
    return { doc, editors }
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
    checkUpdate(update)
    const { doc } = membership
    try {
      Y.applyUpdate(doc.ydoc, update, socket)
    } catch (err) {
      // Some updates decode cleanly yet throw halfway through integration, leaving part of them in
      // the live document. Nothing of it was relayed or stored: reload the document from storage.
      logger.warn({ err, doc: docId }, 'update failed to apply; reloading the document')
      closeForEditors(registry, docId, CLOSE_REASONS.RELOAD)
      registry.evict(docId).catch(evictErr => logger.error({ err: evictErr, doc: docId }, 'evict failed'))
      throw new AppError('INVALID_UPDATE', 'update could not be applied')
    }
    // Peers get the update as soon as it is applied; the ACK waits for durability. A peer may thus
    // see an edit that is never acked (a crash in between); it then syncs it back on its next join.
    socket.to(roomOf(docId)).emit(EVENTS.UPDATE, { doc: docId, update })
    metrics.broadcasts.inc({ event: EVENTS.UPDATE }, doc.sockets.size - 1)
    try {
      await doc.persist(update)
    } catch (err) {
      logger.error({ err, doc: docId }, 'update could not be stored')
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
      for (const { clientId, state } of membership.doc.awareness.apply(update)) {
        if (state === 'null') membership.awarenessClients.delete(clientId)
        else membership.awarenessClients.add(clientId)
      }
      socket.to(roomOf(docId)).emit(EVENTS.AWARENESS, { doc: docId, update })
      metrics.broadcasts.inc({ event: EVENTS.AWARENESS }, membership.doc.sockets.size - 1)
      if (typeof ack === 'function') ack({ ok: true })
    } catch (err) {
      const reply = refusal(EVENTS.AWARENESS, err, metrics)
      if (!(err instanceof AppError)) logger.error({ err }, 'awareness handler failed')
      if (typeof ack === 'function') ack(reply)
    }
  })

  socket.on('disconnect', () => {
    for (const docId of [...memberships.keys()]) detach(socket, docId, registry)
  })
}

/** @param {Uint8Array} sv */
function checkStateVector (sv) {
  try {
    Y.decodeStateVector(sv)
  } catch {
    throw new AppError('BAD_REQUEST', '`sv` is not a Yjs state vector')
  }
}

/** @param {string} docId */
function notJoined (docId) {
  return new AppError('NOT_JOINED', `join ${docId} before sending events for it`)
}
