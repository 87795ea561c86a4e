import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { relative } from 'node:path'
import { brotliCompressSync, gzipSync } from 'node:zlib'

/**
 * @typedef {{ name: string, bytes: number, gzipBytes: number, brBytes: number }} Size
 * @typedef {{ initial: Size[], languages: Size[], monaco: Size[], monacoLanguages: Size[] }} SizeReport
 */

/**
 * What the pages cost: the files every visit of the CodeMirror page loads (the HTML, the
 * stylesheet, the entry chunk and the chunks it imports statically), for each language package
 * what an editor of a session in that language loads on top, and the same two for the Monaco page.
 * Sizes are raw, and as the server sends them to a browser that takes brotli or gzip (the copies
 * scripts/precompress.js wrote; the HTML, sent as it is, is compressed here for comparison).
 * @param {string} dist the build directory, ending in a slash
 * @param {import('esbuild').Metafile} metafile of the pages' build
 * @param {{ entry: string, monaco: string[], style: string }} files URL paths (`/assets/…`) of
 *   the CodeMirror entry, of the Monaco page's own files, and of the shared stylesheet
 * @returns {Promise<SizeReport>}
 */
export async function bundleSizes (dist, metafile, { entry, monaco, style }) {
  const { outputs } = metafile
  const pathOf = (/** @type {string} */ url) => `${dist}${url.slice(1)}`
  const outputOf = (/** @type {string} */ url) => /** @type {string} */ (Object.keys(outputs).find(path => path.endsWith(url)))
  /**
   * Output paths a chunk loads before it runs (its static imports, transitively), or with `onDemand`
   * all it may ever load.
   * @param {string} start @param {boolean} [onDemand]
   */
  const closure = (start, onDemand = false) => {
    const paths = new Set([start])
    for (const path of paths) {
      for (const { path: imported, kind } of outputs[path].imports) {
        if ((kind === 'import-statement' || (onDemand && kind === 'dynamic-import')) && imported in outputs) paths.add(imported)
      }
    }
    return paths
  }
  /** Each chunk a page fetches on demand (a language), with what it loads that the page has not. @param {string} entryPath */
  const languagesOf = (entryPath) => {
    const page = closure(entryPath)
    return Promise.all([...closure(entryPath, true)]
      .filter(path => !page.has(path) && outputs[path].entryPoint && path.endsWith('.js'))
      .map(async path => sum(packageOf(String(outputs[path].entryPoint)),
        await Promise.all([...closure(path)].filter(p => !page.has(p)).map(p => sizeOf(p))))))
  }
  const entryPath = outputOf(entry)
  const monacoPath = outputOf(monaco[0])
  return {
    initial: await Promise.all([`${dist}index.html`, pathOf(style), ...closure(entryPath)].map(path => sizeOf(path))),
    languages: await languagesOf(entryPath),
    monaco: await Promise.all([`${dist}monaco.html`, pathOf(style), ...closure(monacoPath), ...monaco.slice(1).map(pathOf)].map(path => sizeOf(path))),
    monacoLanguages: await languagesOf(monacoPath)
  }
}

/** @param {string} path @returns {Promise<Size>} */
async function sizeOf (path) {
  const content = await readFile(path)
  const compressed = async (/** @type {string} */ suffix, /** @type {(buf: Buffer) => Buffer} */ compress) =>
    existsSync(path + suffix) ? (await readFile(path + suffix)).length : compress(content).length
  return {
    name: relative('.', path),
    bytes: content.length,
    gzipBytes: await compressed('.gz', gzipSync),
    brBytes: await compressed('.br', brotliCompressSync)
  }
}

/** @param {string} name @param {Size[]} sizes @returns {Size} */
export function sum (name, sizes) {
  return sizes.reduce((total, size) => ({
    name,
    bytes: total.bytes + size.bytes,
    gzipBytes: total.gzipBytes + size.gzipBytes,
    brBytes: total.brBytes + size.brBytes
  }), { name, bytes: 0, gzipBytes: 0, brBytes: 0 })
}

/**
 * `node_modules/@codemirror/lang-go/dist/index.js` → `@codemirror/lang-go`; Monaco's grammars, all in
 * one package, by language: `…/monaco-editor/esm/vs/languages/definitions/rust/rust.js` → `monaco-editor rust`.
 * @param {string} path
 */
function packageOf (path) {
  const grammar = /node_modules\/monaco-editor\/esm\/vs\/languages\/definitions\/([^/]+)\//.exec(path)?.[1]
  if (grammar) return `monaco-editor ${grammar}`
  return /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1] ?? path
}

/** @param {SizeReport} report */
export function formatSizes ({ initial, languages, monaco, monacoLanguages }) {
  const kib = (/** @type {number} */ bytes) => `${(bytes / 1024).toFixed(1)} KiB`
  const line = (/** @type {Size} */ { name, bytes, gzipBytes, brBytes }) =>
    `  ${name.padEnd(44)} ${kib(bytes).padStart(10)} ${kib(gzipBytes).padStart(10)} gzip ${kib(brBytes).padStart(10)} brotli\n`
  return 'CodeMirror page, every load:\n' + initial.map(line).join('') + line(sum('total', initial)) +
    'On top, for a session in one language:\n' + languages.map(line).join('') +
    'Monaco page (/s/:id?editor=monaco), every load:\n' + monaco.map(line).join('') + line(sum('total', monaco)) +
    'On top, for a session in one language:\n' + monacoLanguages.map(line).join('')
}
