import { stat } from 'node:fs/promises'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Router } from 'express'
import { ENCODINGS, HASHED_NAME } from '../../scripts/precompress.js'
import { AppError } from '../errors.js'
import { isDocId } from '../../isomorphic/ids.js'

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

/** Headers of a page: it names the hashed assets of the current build, so it is always revalidated. */
const PAGE_CACHE = 'no-cache'
/** Headers of a hashed asset: its content never changes under that name (client/build.js). */
const ASSET_CACHE = 'public, max-age=31536000, immutable'

/** The pages by `?editor=` value; CodeMirror when there is none. */
const PAGES = Object.freeze({ codemirror: 'index.html', monaco: 'monaco.html' })

/**
 * The editor pages built by `npm run build` (client/): `/`, `/s/:id` and `/s/:id/history` serve one
 * page whose script picks the view, `?editor=monaco` the Monaco one; `/assets` sends the best brotli or gzip copy the
 * browser accepts, cached for a year (the names carry content hashes).
 * @param {{ root?: string }} [options] the build directory. Default client/dist.
 */
export function staticRoutes ({ root = CLIENT_DIST } = {}) {
  const router = Router()
  const assets = join(root, 'assets')

  /** @param {string} file @param {import('express').Response} res @param {import('express').NextFunction} next */
  const page = (file, res, next) => {
    res.set('content-security-policy', PAGE_POLICY)
    res.sendFile(file, { root, headers: { 'cache-control': PAGE_CACHE } }, (err) => {
      if (!err) return
      next(/** @type {NodeJS.ErrnoException} */ (err).code === 'ENOENT'
        ? new AppError('NOT_FOUND', 'the editor page is not built: run `npm run build`')
        : err)
    })
  }

  router.get('/', (req, res, next) => page(PAGES.codemirror, res, next))
  router.get('/s/:id', (req, res, next) => {
    const editor = req.query.editor ?? 'codemirror'
    if (!isDocId(req.params.id) || typeof editor !== 'string' || !Object.hasOwn(PAGES, editor)) return next()
    page(PAGES[/** @type {keyof typeof PAGES} */ (editor)], res, next)
  })
  router.get('/s/:id/history', (req, res, next) => {
    if (!isDocId(req.params.id)) return next()
    page(PAGES.codemirror, res, next)
  })
  router.get('/assets/:name', async (req, res, next) => {
    const { name } = req.params
    if (!ASSET_NAME.test(name) || ENCODINGS.some(({ suffix }) => name.endsWith(suffix))) return next()
    try {
      const { file, encoding } = await bestCopy(assets, name, req.get('accept-encoding') ?? '')
      res.type(extname(name))
      res.vary('Accept-Encoding')
      if (encoding) res.set('content-encoding', encoding)
      res.set('cache-control', HASHED_NAME.test(name) ? ASSET_CACHE : PAGE_CACHE)
      res.sendFile(file, { root: assets, cacheControl: false }, err => { if (err) next(err) })
    } catch (err) {
      next(/** @type {NodeJS.ErrnoException} */ (err).code === 'ENOENT' ? undefined : err)
    }
  })
  return router
}

/** Names the build writes: no slashes, no leading dot. */
const ASSET_NAME = /^[\w-][\w.-]*$/

/**
 * The copy of `name` to send: brotli or gzip when the request accepts it and the build wrote one,
 * else the file itself. Among encodings of equal quality brotli wins: browsers list `gzip` first
 * (`gzip, deflate, br, zstd`) without preferring it.
 * @param {string} dir @param {string} name @param {string} acceptEncoding the request's Accept-Encoding header
 */
async function bestCopy (dir, name, acceptEncoding) {
  await stat(join(dir, name))
  const quality = qualities(acceptEncoding)
  const q = (/** @type {string} */ encoding) => quality.get(encoding) ?? quality.get('*') ?? 0
  const ranked = ENCODINGS.filter(({ encoding }) => q(encoding) > 0)
    .sort((a, b) => q(b.encoding) - q(a.encoding))
  for (const { encoding, suffix } of ranked) {
    const copy = await stat(join(dir, name + suffix)).catch(() => null)
    if (copy?.isFile()) return { file: name + suffix, encoding }
  }
  return { file: name, encoding: null }
}

/** Accept-Encoding as a map of encoding to quality (`br;q=0.5` → 0.5; no q → 1). @param {string} header */
function qualities (header) {
  /** @type {Map<string, number>} */
  const map = new Map()
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';')
    if (!name) continue
    const q = params.map(p => /^\s*q=([\d.]+)\s*$/.exec(p)?.[1]).find(Boolean)
    map.set(name, q === undefined ? 1 : Number(q) || 0)
  }
  return map
}
