import { Router } from 'express'
import * as Y from 'yjs'
import { AppError, fromStorage } from '../errors.js'
import { DOC_ID_PATTERN, TEXT_NAME } from '../protocol.js'
import { contentQuery, createSessionBody, listSessionsQuery, parse, updateSessionBody } from './validation.js'

/**
 * REST session API under /api/sessions.
 * @param {object} deps
 * @param {import('../sessions/session-service.js').SessionService} deps.sessions
 * @param {import('../docs/doc-registry.js').DocRegistry} deps.registry
 */
export function sessionsRoutes ({ sessions, registry }) {
  const router = Router()

  router.param('id', (req, res, next, id) => {
    next(DOC_ID_PATTERN.test(id) ? undefined : new AppError('NOT_FOUND', `no session ${id}`))
  })

  router.post('/', async (req, res) => {
    const session = await sessions.create(parse(createSessionBody, req.body))
    req.log.info({ session: session.id }, 'session created')
    res.status(201).location(`/api/sessions/${session.id}`).json(session)
  })

  router.get('/', async (req, res) => {
    res.json(await sessions.list(parse(listSessionsQuery, req.query)))
  })

  router.get('/:id', async (req, res) => {
    res.json(await sessions.get(req.params.id))
  })

  router.patch('/:id', async (req, res) => {
    const session = await sessions.update(req.params.id, parse(updateSessionBody, req.body))
    req.log.info({ session: session.id }, 'session updated')
    res.json(session)
  })

  router.delete('/:id', async (req, res) => {
    await sessions.delete(req.params.id)
    req.log.info({ session: req.params.id }, 'session deleted')
    res.status(204).end()
  })

  router.get('/:id/content', async (req, res) => {
    const { format } = parse(contentQuery, req.query)
    await sessions.record(req.params.id)
    const doc = await registry.open(req.params.id)
    try {
      // Another process may have stored edits this copy has not read yet.
      await fromStorage(doc.catchUp())
      if (format === 'yjs') {
        res.type('application/octet-stream').send(Buffer.from(Y.encodeStateAsUpdate(doc.ydoc)))
      } else {
        res.type('text/plain').send(doc.ydoc.getText(TEXT_NAME).toString())
      }
    } finally {
      registry.release(doc)
    }
  })

  return router
}
