import { readFile } from 'node:fs/promises'
import { basename, relative } from 'node:path'
import { gzipSync } from 'node:zlib'

const ENTRY_FILE = 'app.js'

/**
 * @typedef {{ name: string, bytes: number, gzipBytes: number }} Size
 * @typedef {{ initial: Size[], languages: Size[] }} SizeReport
 */

/**
 * What the page costs: the files every visit loads (the HTML, the stylesheet, the entry chunk and
 * the chunks it imports statically) and, for each language package, what an editor of a session
 * in that language loads on top. Sizes are raw, as the server sends them, and gzipped, as a
 * compressing proxy would send them.
 * @param {string} dist the build directory, ending in a slash
 * @param {import('esbuild').Metafile} metafile
 * @returns {Promise<SizeReport>}
 */
export async function bundleSizes (dist, metafile) {
  const { outputs } = metafile
  /** Output paths a chunk loads before it runs: itself and its static imports, transitively. @param {string} start */
  const closure = (start) => {
    const paths = new Set([start])
    for (const path of paths) {
      for (const { path: imported, kind } of outputs[path].imports) {
        if (kind === 'import-statement' && imported in outputs) paths.add(imported)
      }
    }
    return paths
  }
  // With code splitting every dynamic import is an entry point too; the page's own is app.js.
  const entry = Object.keys(outputs).find(path => basename(path) === ENTRY_FILE)
  if (!entry) throw new Error(`the build has no ${ENTRY_FILE}`)
  const initial = closure(entry)
  /** @type {Map<string, Size>} */
  const files = new Map()
  const sizeOf = async (/** @type {string} */ path) => {
    const content = await readFile(path)
    return { name: relative('.', path), bytes: content.length, gzipBytes: gzipSync(content).length }
  }
  for (const path of Object.keys(outputs)) files.set(path, await sizeOf(path))

  const languages = Object.entries(outputs)
    .filter(([path, { entryPoint }]) => entryPoint && path !== entry)
    .map(([path, { entryPoint }]) => sum(packageOf(String(entryPoint)), [...closure(path)].filter(p => !initial.has(p)).map(p => /** @type {Size} */ (files.get(p)))))
  return {
    initial: [
      await sizeOf(`${dist}index.html`),
      await sizeOf(`${dist}assets/style.css`),
      ...[...initial].map(path => /** @type {Size} */ (files.get(path)))
    ],
    languages
  }
}

/** @param {string} name @param {Size[]} sizes @returns {Size} */
function sum (name, sizes) {
  return sizes.reduce((total, size) => ({ name, bytes: total.bytes + size.bytes, gzipBytes: total.gzipBytes + size.gzipBytes }), { name, bytes: 0, gzipBytes: 0 })
}

/** `node_modules/@codemirror/lang-go/dist/index.js` → `@codemirror/lang-go`. @param {string} path */
function packageOf (path) {
  return /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path)?.[1] ?? path
}

/** @param {SizeReport} report */
export function formatSizes ({ initial, languages }) {
  const kib = (/** @type {number} */ bytes) => `${(bytes / 1024).toFixed(1)} KiB`
  const line = (/** @type {Size} */ { name, bytes, gzipBytes }) => `  ${name.padEnd(40)} ${kib(bytes).padStart(10)} ${kib(gzipBytes).padStart(10)} gzipped\n`
  return 'Every page load:\n' + initial.map(line).join('') + line(sum('total', initial)) +
    'On top, for a session in one language:\n' + languages.map(line).join('')
}
