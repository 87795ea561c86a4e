import { existsSync } from 'node:fs'
import { copyFile, mkdir, rm } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { bundleSizes, formatSizes } from './bundle-size.js'

// Builds the editor page into client/dist: index.html, and under assets/ the script (one entry
// chunk plus one chunk per language, loaded on demand) and the stylesheet. The server serves the
// directory as it is (server/http/static-routes.js); nothing comes from a CDN.
// `--if-missing` builds only when there is no build yet: what `npm start` runs first.

const here = (/** @type {string} */ path) => fileURLToPath(new URL(path, import.meta.url))
const DIST = here('dist/')
const ASSETS = here('dist/assets/')

/** @returns {Promise<import('./bundle-size.js').SizeReport>} */
export async function build () {
  // esbuild is a dev dependency: load it only when there is something to build.
  const esbuild = await import('esbuild')
  await rm(DIST, { recursive: true, force: true })
  await mkdir(ASSETS, { recursive: true })
  const result = await esbuild.build({
    entryPoints: { app: here('src/page/main.js') },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    minify: true,
    outdir: ASSETS,
    chunkNames: 'chunk-[hash]',
    metafile: true,
    logLevel: 'warning'
  })
  await copyFile(here('static/index.html'), `${DIST}index.html`)
  await copyFile(here('static/style.css'), `${ASSETS}style.css`)
  return bundleSizes(DIST, result.metafile)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--if-missing') && existsSync(`${DIST}index.html`)) process.exit(0)
  process.stdout.write(formatSizes(await build()))
}
