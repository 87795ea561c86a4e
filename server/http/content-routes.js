import express, { Router } from 'express'
import { AppError } from '../errors.js'
import { isDocId } from '../../isomorphic/ids.js'
import { applyEdits, replaceText } from '../documents/text-edit.js'
import { parse, replaceContentBody, textEditsBody } from './validation.js'
/** @import { Author } from '../documents/live-doc.js' */
/** @import { Caller } from '../auth/api-key.js' */

/**
 * PUT /api/sessions/:id/content and POST …/edits: a document's text changed over HTTP (it is read
 * with GET …/content, sessions-routes.js). A change goes through the rules of an editor's update,
 * reaches every editor as a `doc:update`, and is answered once stored. It takes the API key or an
 * editor's join token for the session.
 * @param {object} deps @param {import('../sessions/session-service.js').SessionService} deps.sessions
 * @param {import('../documents/doc-registry.js').DocRegistry} deps.registry
 * @param {ReturnType<typeof import('../auth/api-key.js').apiGuards>} deps.guards
 * @param {import('../audit.js').Audit} deps.audit @param {import('../config.js').Config} deps.config
 */
export function contentRoutes ({ sessions, registry, guards, audit, config }) {
  const router = Router()
  const { requireApiKeyOrEditor } = guards
  // Read only by the routes that take one, after the credentials (sessions-routes.js says why).
  const json = express.json({ limit: config.maxBodyBytes })
  const plainText = express.text({ limit: config.maxBodyBytes, type: 'text/plain' })

  router.param('id', (req, res, next, id) => {
    next(isDocId(id) ? undefined : new AppError('NOT_FOUND', `no session ${id}`))
  })

  /**
   * The session's document, held open while `use` runs.
   * @template T @param {string} id @param {(doc: import('../documents/live-doc.js').LiveDoc) => Promise<T>} use
   */
  const withDoc = async (id, use) => {
    await sessions.record(id)
    const doc = await registry.open(id)
    try {
      return await use(doc)
    } finally {
      registry.release(doc)
    }
  }

  router.put('/:id/content', requireApiKeyOrEditor, json, plainText, async (req, res) => {
    const { text } = parse(replaceContentBody, typeof req.body === 'string' ? { text: req.body } : req.body)
    const caller = /** @type {Caller} */ (res.locals.caller)
    const deps = { config, logger: req.log }
    const result = await withDoc(req.params.id, doc => replaceText(doc, text, authorOf(caller), deps, { ifRevision: revisionIn(req.get('if-match')) }))
    audit.action('content.replace', { ip: req.ip, session: req.params.id, ...whoOf(caller), revision: result.revision })
    res.set('etag', `"${result.revision}"`).json(result)
  })

  router.post('/:id/edits', requireApiKeyOrEditor, json, async (req, res) => {
    const { revision, edits } = parse(textEditsBody, req.body)
    const caller = /** @type {Caller} */ (res.locals.caller)
    const deps = { config, logger: req.log }
    const result = await withDoc(req.params.id, doc => applyEdits(doc, revision, edits, authorOf(caller), deps))
    audit.action('content.edit', { ip: req.ip, session: req.params.id, ...whoOf(caller), edits: edits.length, revision: result.revision })
    res.set('etag', `"${result.revision}"`).json(result)
  })

  return router
}

/**
 * The revision an `If-Match` names (GET …/content's ETag), or undefined for none or `*`.
 * @param {string | undefined} header
 */
function revisionIn (header) {
  const value = header?.trim()
  if (value === undefined || value === '' || value === '*') return undefined
  return value.replace(/^W\//, '').replace(/^"(.*)"$/, '$1')
}

/** @param {Caller} caller @returns {Author} */
const authorOf = caller => caller.kind === 'token' ? { kind: 'token', user: caller.user } : { kind: 'api-key' }

/** The audit's fields for who made a change: a token's user, or nothing for the API key. @param {Caller} caller */
const whoOf = caller => caller.kind === 'token' ? { user: caller.user } : {}
