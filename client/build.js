import { existsSync } from 'node:fs'
import { copyFile, mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { bundleSizes, formatSizes } from './bundle-size.js'
import { hashedName, precompress } from '../scripts/precompress.js'

// Builds the editor pages into client/dist: index.html (the CodeMirror page) and monaco.html (the
// Monaco recipe), and under assets/ their scripts, stylesheets and Monaco's worker. Every asset's
// name carries a hash of its content, so the server can let browsers cache it for good, and each
// has a brotli (.br) and gzip (.gz) copy beside it, compressed once here rather than per request
// (server/http/static-routes.js picks one by Accept-Encoding). Nothing comes from a CDN.
// The CodeMirror page loads one entry chunk plus one chunk per language on demand, and none of
// Monaco: the two pages are separate entries and share only common chunks (Yjs, the provider).
// `--if-missing` builds only when there is no build yet: what `npm start` runs first.

const here = (/** @type {string} */ path) => fileURLToPath(new URL(path, import.meta.url))
const DIST = here('dist/')
const ASSETS = here('dist/assets/')
const CODEMIRROR_ENTRY = here('src/page/main.js')
const MONACO_ENTRY = here('src/page/monaco-main.js')
const require = createRequire(import.meta.url)

/**
 * y-monaco imports `monaco-editor/esm/vs/…`, a path monaco-editor's exports map no longer names
 * (it maps `./*` to `./esm/vs/*`): resolve it to the file, the same one the page imports.
 * @type {import('esbuild').Plugin}
 */
const monacoDeepImports = {
  name: 'monaco-deep-imports',
  setup (build) {
    build.onResolve({ filter: /^monaco-editor\/esm\/vs\// }, args => ({ path: require.resolve(args.path.replace('/esm/vs/', '/')) }))
  }
}

/** @returns {Promise<import('./bundle-size.js').SizeReport>} */
export async function build () {
  // esbuild is loaded only when there is something to build.
  const esbuild = await import('esbuild')
  await rm(DIST, { recursive: true, force: true })
  await mkdir(ASSETS, { recursive: true })
  /** @type {import('esbuild').BuildOptions} */
  const common = {
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    minify: true,
    outdir: ASSETS,
    entryNames: '[name]-[hash]',
    metafile: true,
    logLevel: 'warning'
  }
  const worker = await esbuild.build({
    ...common,
    entryPoints: { 'editor.worker': require.resolve('monaco-editor/editor/editor.worker.js') }
  })
  const pages = await esbuild.build({
    ...common,
    entryPoints: { app: CODEMIRROR_ENTRY, monaco: MONACO_ENTRY },
    splitting: true,
    chunkNames: 'chunk-[hash]',
    assetNames: '[name]-[hash]',
    loader: { '.ttf': 'file' },
    plugins: [monacoDeepImports]
  })
  const metafile = /** @type {import('esbuild').Metafile} */ (pages.metafile)
  const workerOutputs = Object.keys(/** @type {import('esbuild').Metafile} */ (worker.metafile).outputs)
  const style = hashedName('style.css', await readFile(here('static/style.css')))
  await copyFile(here('static/style.css'), `${ASSETS}${style}`)

  const asset = (/** @type {string} */ path) => `/assets/${path.slice(path.lastIndexOf('/') + 1)}`
  const outputOf = (/** @type {import('esbuild').Metafile} */ metafile, /** @type {string} */ entry) => {
    const found = Object.entries(metafile.outputs).find(([, output]) => output.entryPoint && here(`../${output.entryPoint}`) === entry)
    if (!found) throw new Error(`the build has no output for ${entry}`)
    return { js: asset(found[0]), css: found[1].cssBundle ? asset(found[1].cssBundle) : null }
  }
  const codemirror = outputOf(metafile, CODEMIRROR_ENTRY)
  const monaco = outputOf(metafile, MONACO_ENTRY)
  const workerFile = asset(/** @type {string} */ (workerOutputs.find(path => path.endsWith('.js'))))

  const template = await readFile(here('static/index.html'), 'utf8')
  await writeFile(`${DIST}index.html`, page(template, { script: codemirror.js, styles: [`/assets/${style}`] }))
  await writeFile(`${DIST}monaco.html`, page(template, {
    script: monaco.js,
    styles: [`/assets/${style}`, ...(monaco.css ? [monaco.css] : [])],
    meta: { 'monaco-worker': workerFile }
  }))
  await precompress(ASSETS)
  return bundleSizes(DIST, metafile, { entry: codemirror.js, monaco: [monaco.js, monaco.css ?? '', workerFile].filter(Boolean), style: `/assets/${style}` })
}

/**
 * The page template with its script and stylesheets replaced by hashed ones.
 * @param {string} template client/static/index.html
 * @param {{ script: string, styles: string[], meta?: Record<string, string> }} files
 */
function page (template, { script, styles, meta = {} }) {
  const links = styles.map(href => `<link rel="stylesheet" href="${href}">`).join('\n  ')
  const metas = Object.entries(meta).map(([name, content]) => `<meta name="${name}" content="${content}">\n  `).join('')
  return template
    .replace('<link rel="stylesheet" href="/assets/style.css">', metas + links)
    .replace('src="/assets/app.js"', `src="${script}"`)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--if-missing') && existsSync(`${DIST}index.html`)) process.exit(0)
  process.stdout.write(formatSizes(await build()))
}
