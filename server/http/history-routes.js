import express, { Router } from 'express'
import { AppError } from '../errors.js'
import { isDocId } from '../../isomorphic/ids.js'
import { MAX_UPDATES_PAGE } from '../sessions/history-service.js'
import { checkpointBody, historyQuery, historyUpdatesQuery, parse } from './validation.js'

/**
 * A session's history under /api/sessions (mounted after sessions-routes.js, whose rate limit it
 * shares): viewers may read it; naming a checkpoint takes the API key or an editor's token.
 * @param {object} deps @param {import('../sessions/history-service.js').HistoryService} deps.history
 * @param {ReturnType<typeof import('../auth/api-key.js').apiGuards>} deps.guards
 * @param {import('../audit.js').Audit} deps.audit @param {import('../config.js').Config} deps.config
 */
export function historyRoutes ({ history, guards, audit, config }) {
  const router = Router()
  const { requireApiKeyOrToken, requireApiKeyOrEditor } = guards
  const body = express.json({ limit: config.maxBodyBytes })
  const updatesQuery = historyUpdatesQuery(MAX_UPDATES_PAGE)

  router.param('id', (req, res, next, id) => {
    next(isDocId(id) ? undefined : new AppError('NOT_FOUND', `no session ${id}`))
  })

  router.get('/:id/history', requireApiKeyOrToken, async (req, res) => {
    res.json(await history.overview(req.params.id, parse(historyQuery, req.query)))
  })

  router.get('/:id/history/updates', requireApiKeyOrToken, async (req, res) => {
    res.json(await history.updates(req.params.id, parse(updatesQuery, req.query)))
  })

  router.post('/:id/checkpoints', requireApiKeyOrEditor, body, async (req, res) => {
    const { name } = parse(checkpointBody, req.body)
    const caller = /** @type {import('../auth/api-key.js').Caller} */ (res.locals.caller)
    const checkpoint = await history.addCheckpoint(req.params.id, name, caller.kind === 'token' ? caller.user : null)
    audit.action('checkpoint.create', { ip: req.ip, session: req.params.id, name })
    res.status(201).json(checkpoint)
  })

  return router
}
