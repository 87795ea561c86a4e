import { execFileSync } from 'node:child_process'
import { copyFileSync, readdirSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

// Writes lib/, what the @tandem/client tarball ships: the provider (src/, without the page) and the
// wire code it imports from ../isomorphic/, which the server imports too. Both are copied unchanged
// to the paths they have in the repository (lib/client/src/, lib/isomorphic/), so the relative
// imports between them hold inside the package, each file beside the declarations tsc generates from
// its JSDoc. tsc decides what is copied: the files reachable from the two entries, and nothing else.
// `npm pack` runs it first (prepack) and `--remove` after (postpack).

const here = (/** @type {string} */ path) => fileURLToPath(new URL(path, import.meta.url))
const LIB = here('lib/')
const ROOT = here('../')

rmSync(LIB, { recursive: true, force: true })
if (!process.argv.includes('--remove')) {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  execFileSync(process.execPath, [tsc, '-p', here('tsconfig.package.json')], { stdio: 'inherit' })
  const declarations = readdirSync(LIB, { recursive: true, encoding: 'utf8' }).filter(path => path.endsWith('.d.ts'))
  for (const declaration of declarations) {
    const source = declaration.replace(/\.d\.ts$/, '.js')
    copyFileSync(`${ROOT}${source}`, `${LIB}${source}`)
  }
}
