import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import express, { Router } from 'express'
import { AppError } from '../errors.js'
import { DOC_ID_PATTERN } from '../protocol.js'

const CLIENT_DIST = fileURLToPath(new URL('../../client/dist/', import.meta.url))

// The page may load from this origin only: its bundle, its stylesheet, its REST calls and socket.
// Inline styles stay allowed because CodeMirror injects its themes as <style> elements; images are
// limited to this origin so a cursor colour (a CSS value another editor picks) cannot fetch anything.
const PAGE_POLICY = [
  "default-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'"
].join('; ')

/**
 * The editor page built by `npm run build` (client/): `/` lists sessions, `/s/:id` edits one; both
 * are the same HTML, the script picks the view. Its files are under `/assets`.
 * @param {{ root?: string }} [options] the build directory. Default client/dist.
 */
export function staticRoutes ({ root = CLIENT_DIST } = {}) {
  const router = Router()

  /**
   * @param {import('express').Request} req
   * @param {import('express').Response} res
   * @param {import('express').NextFunction} next
   */
  const page = (req, res, next) => {
    res.set('content-security-policy', PAGE_POLICY)
    res.sendFile('index.html', { root }, (err) => {
      if (!err) return
      next(/** @type {any} */ (err).code === 'ENOENT'
        ? new AppError('NOT_FOUND', 'the editor page is not built: run `npm run build`')
        : err)
    })
  }

  router.get('/', page)
  router.get('/s/:id', (req, res, next) => {
    if (DOC_ID_PATTERN.test(req.params.id)) page(req, res, next)
    else next()
  })
  router.use('/assets', express.static(join(root, 'assets'), { index: false }))
  return router
}
