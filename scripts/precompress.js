import { createHash } from 'node:crypto'
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'

// The asset names and encodings that the page's build (client/build.js) writes and the server
// (server/http/static-routes.js) serves: here, beside the other scripts, as the server imports
// nothing from client/.

const brotli = promisify(brotliCompress)
const gzipAsync = promisify(gzip)

/** Encodings written beside each asset, as `Content-Encoding` names them, with their file suffix. */
export const ENCODINGS = Object.freeze([
  Object.freeze({ encoding: 'br', suffix: '.br' }),
  Object.freeze({ encoding: 'gzip', suffix: '.gz' })
])

/**
 * The shape of a hashed asset name (`app-7GQ2K3ZD.js`): esbuild's 8 characters of base32, which
 * `hashedName` copies. Only such a name may be cached for good: its content never changes.
 */
export const HASHED_NAME = /-[A-Z0-9]{8}\.[a-z0-9]+$/

/**
 * `style.css` → `style-3F2A9C1B.css`: a name that changes whenever the content does.
 * @param {string} name
 * @param {Uint8Array} content
 */
export function hashedName (name, content) {
  const hash = createHash('sha256').update(content).digest('hex').slice(0, 8).toUpperCase()
  const dot = name.lastIndexOf('.')
  return `${name.slice(0, dot)}-${hash}${name.slice(dot)}`
}

/**
 * Writes `<file>.br` (brotli at its highest quality) and `<file>.gz` (gzip level 9) beside every
 * file of `dir`. Done once per build, so the quality costs nothing per request: brotli 11 takes
 * the CodeMirror page's first load from ~570 KiB to well under a third of it.
 * @param {string} dir ending in a slash
 */
export async function precompress (dir) {
  const files = (await readdir(dir)).filter(name => !ENCODINGS.some(({ suffix }) => name.endsWith(suffix)))
  await Promise.all(files.map(async (name) => {
    const content = await readFile(`${dir}${name}`)
    await Promise.all([
      brotli(content, { params: { [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: content.length } })
        .then(compressed => writeFile(`${dir}${name}.br`, compressed)),
      gzipAsync(content, { level: 9 }).then(compressed => writeFile(`${dir}${name}.gz`, compressed))
    ])
  }))
}
