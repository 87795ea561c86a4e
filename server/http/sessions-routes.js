import express, { Router } from 'express'
import * as Y from 'yjs'
import { AppError, fromStorage } from '../errors.js'
import { TEXT_NAME } from '../../isomorphic/events.js'
import { isDocId } from '../../isomorphic/ids.js'
import { revisionOf } from '../documents/revision.js'
import { stateOfDoc, textOf, textOfState } from '../sessions/history-service.js'
import { contentQuery, createSessionBody, createTokenBody, listSessionsQuery, parse, revokeTokensQuery, updateSessionBody } from './validation.js'

/**
 * /api/sessions. Management needs the API key; reading a session also takes its join token; listing
 * needs the key unless LIST_NEEDS_API_KEY=false.
 * @param {object} deps @param {import('../sessions/session-service.js').SessionService} deps.sessions
 * @param {import('../documents/doc-registry.js').DocRegistry} deps.registry
 * @param {import('../auth/access.js').Access} deps.access
 * @param {import('../realtime/cluster.js').Cluster} deps.cluster
 * @param {ReturnType<typeof import('../auth/api-key.js').apiGuards>} deps.guards
 * @param {import('../audit.js').Audit} deps.audit @param {import('../config.js').Config} deps.config
 * @param {import('../sessions/history-service.js').HistoryService} deps.history `content` at a time or checkpoint
 */
export function sessionsRoutes ({ sessions, registry, access, cluster, guards, audit, config, history }) {
  const router = Router()
  const tokenBody = createTokenBody(config.maxTokenTtlSeconds)
  const { requireApiKey, requireApiKeyOrToken } = guards
  /** @type {import('../auth/api-key.js').Guard} */
  const open = (req, res, next) => next()
  const requireForList = config.listNeedsApiKey ? requireApiKey : open
  // A body is read only by routes that take one, after the key and the rate limit: a small compressed
  // body inflates to MAX_BODY_BYTES of nested arrays whose parse holds the event loop.
  const body = express.json({ limit: config.maxBodyBytes })

  router.param('id', (req, res, next, id) => {
    next(isDocId(id) ? undefined : new AppError('NOT_FOUND', `no session ${id}`))
  })

  router.post('/', requireApiKey, body, async (req, res) => {
    const session = await sessions.create(parse(createSessionBody, req.body))
    audit.action('session.create', { ip: req.ip, session: session.id })
    res.status(201).location(`/api/sessions/${session.id}`).json(session)
  })

  router.get('/', requireForList, async (req, res) => {
    res.json(await sessions.list(parse(listSessionsQuery, req.query)))
  })

  router.get('/:id', requireApiKeyOrToken, async (req, res) => {
    res.json(await sessions.get(req.params.id))
  })

  router.patch('/:id', requireApiKey, body, async (req, res) => {
    const session = await sessions.update(req.params.id, parse(updateSessionBody, req.body))
    audit.action('session.update', { ip: req.ip, session: session.id })
    res.json(session)
  })

  router.delete('/:id', requireApiKey, async (req, res) => {
    await sessions.delete(req.params.id)
    audit.action('session.delete', { ip: req.ip, session: req.params.id })
    res.status(204).end()
  })

  router.post('/:id/tokens', requireApiKey, body, async (req, res) => {
    const request = parse(tokenBody, req.body)
    await sessions.record(req.params.id)
    const token = await access.issue(req.params.id, request)
    audit.action('token.create', { ip: req.ip, session: req.params.id, user: token.user, role: token.role, tokenId: token.tokenId })
    res.status(201).json(token)
  })

  // Stored first (no process admits the token again), then every process closes its sockets.
  router.delete('/:id/tokens/:tokenId', requireApiKey, async (req, res) => {
    const { id, tokenId } = req.params
    await sessions.record(id)
    await access.revokeToken(id, tokenId)
    cluster.accessRevoked(id, { tokenId })
    audit.action('token.revoke', { ip: req.ip, session: id, tokenId })
    res.status(204).end()
  })

  router.delete('/:id/tokens', requireApiKey, async (req, res) => {
    const { user } = parse(revokeTokensQuery, req.query)
    await sessions.record(req.params.id)
    await access.revokeUser(req.params.id, user)
    cluster.accessRevoked(req.params.id, { user })
    audit.action('token.revoke', { ip: req.ip, session: req.params.id, user })
    res.status(204).end()
  })

  router.get('/:id/content', requireApiKeyOrToken, async (req, res) => {
    const { format, at, checkpoint } = parse(contentQuery, req.query)
    if (at !== undefined) {
      // Read before the type is set: a refusal is sent as JSON.
      if (format === 'yjs') {
        const state = await history.readAt(req.params.id, at, stateOfDoc)
        res.type('application/octet-stream').send(Buffer.from(state))
      } else {
        const text = await history.readAt(req.params.id, at, textOf)
        res.type('text/plain').send(text)
      }
      return
    }
    if (checkpoint !== undefined) {
      const state = await history.checkpointState(req.params.id, checkpoint)
      if (format === 'yjs') res.type('application/octet-stream').send(Buffer.from(state))
      else res.type('text/plain').send(textOfState(state))
      return
    }
    await sessions.record(req.params.id)
    const doc = await registry.open(req.params.id)
    try {
      // Another process may have stored edits this copy has not read yet.
      await fromStorage(doc.catchUp())
      if (format === 'yjs') {
        res.type('application/octet-stream').send(Buffer.from(Y.encodeStateAsUpdate(doc.ydoc)))
      } else {
        // The revision lets a client that changes the text say which one it read (content-routes.js).
        res.set('etag', `"${revisionOf(doc.ydoc)}"`).type('text/plain').send(doc.ydoc.getText(TEXT_NAME).toString())
      }
    } finally {
      registry.release(doc)
    }
  })

  return router
}
