import express, { Router } from 'express'
import { AppError } from '../errors.js'
import { isDocId } from '../../isomorphic/ids.js'
import { replaceText } from '../documents/text-edit.js'
import { MAX_UPDATES_PAGE, textOf, textOfState } from '../sessions/history-service.js'
import { checkpointBody, historyQuery, historyUpdatesQuery, parse, restoreBody } from './validation.js'

/**
 * A session's history under /api/sessions (mounted after sessions-routes.js, whose rate limit it
 * shares): viewers may read it; naming a checkpoint or restoring takes the API key or an editor's token.
 * @param {object} deps @param {import('../sessions/history-service.js').HistoryService} deps.history
 * @param {import('../documents/doc-registry.js').DocRegistry} deps.registry
 * @param {ReturnType<typeof import('../auth/api-key.js').apiGuards>} deps.guards
 * @param {import('../audit.js').Audit} deps.audit @param {import('../config.js').Config} deps.config
 */
export function historyRoutes ({ history, registry, guards, audit, config }) {
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

  // An earlier text comes back as a forward edit: the smallest edits from the text now, which every
  // editor receives as an update; nothing of history is rewritten, and a later restore can undo it.
  router.post('/:id/restore', requireApiKeyOrEditor, body, async (req, res) => {
    const { at, checkpoint } = parse(restoreBody, req.body)
    const { id } = req.params
    const text = at !== undefined
      ? await history.readAt(id, at, textOf)
      : textOfState(await history.checkpointState(id, /** @type {string} */ (checkpoint)))
    const caller = /** @type {import('../auth/api-key.js').Caller} */ (res.locals.caller)
    const author = caller.kind === 'token' ? { kind: /** @type {const} */ ('token'), user: caller.user } : { kind: /** @type {const} */ ('api-key') }
    const doc = await registry.open(id)
    let result
    try {
      result = await replaceText(doc, text, author, { config, logger: req.log })
    } finally {
      registry.release(doc)
    }
    const from = at !== undefined ? { at: new Date(at).toISOString() } : { checkpoint }
    audit.action('content.restore', { ip: req.ip, session: id, ...(caller.kind === 'token' ? { user: caller.user } : {}), ...from, revision: result.revision })
    res.set('etag', `"${result.revision}"`).json({ ...result, restored: from })
  })

  return router
}
