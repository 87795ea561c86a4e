import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

// What `npm ci --omit=dev` installs must be enough for `npm start` (the server, and the page that
// `prestart` bundles with esbuild when there is no build yet) and for `npm run cluster`; what only
// the load test and the benchmarks use stays out of it. Checked from the sources' imports, not from
// memory.

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'))
const production = new Set(Object.keys(pkg.dependencies))
const development = new Set(Object.keys(pkg.devDependencies))
const builtins = new Set(builtinModules)

/** Every .js file under `dir` (or `dir` itself when it is a file). @param {string} dir @returns {string[]} */
function sources (dir) {
  const path = join(ROOT, dir)
  if (path.endsWith('.js')) return [path]
  return readdirSync(path, { withFileTypes: true, recursive: true })
    .filter(entry => entry.isFile() && entry.name.endsWith('.js'))
    .map(entry => join(entry.parentPath, entry.name))
}

/**
 * The packages a file loads at run time: static and dynamic imports and require() calls, outside
 * comments (a JSDoc `import('x')` is a type, needed by the type check only).
 * @param {string} file
 */
function packagesOf (file) {
  const code = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '')
  const specifiers = [...code.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\brequire\(\s*|createRequire\([^)]*\)\(\s*)'([^']+)'/g)].map(match => match[1])
  return specifiers
    .filter(spec => !spec.startsWith('.') && !spec.startsWith('node:') && !builtins.has(spec))
    .map(spec => spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0])
}

/** @param {string[]} dirs @returns {Map<string, string>} package → a file that loads it */
function importsOf (dirs) {
  const found = new Map()
  for (const file of dirs.flatMap(sources)) {
    for (const name of packagesOf(file)) if (!found.has(name)) found.set(name, file.slice(ROOT.length))
  }
  return found
}

/** Whether an installed production package depends on `name`. @param {string} name */
function pulledInByProduction (name) {
  return Object.entries(lock.packages).some(([path, entry]) => path !== '' && !entry.dev && name in (entry.dependencies ?? {}))
}

const server = importsOf(['server', 'isomorphic', 'scripts'])
// The page `prestart` builds: esbuild and everything the bundle pulls in.
const page = importsOf(['client/src', 'isomorphic', 'client/build.js', 'client/bundle-size.js'])
const loadtest = importsOf(['loadtest', 'bench'])

describe('package.json', () => {
  it('lists every package the server imports as a production dependency', () => {
    assert.ok(server.size >= 10, 'the scan finds the server\'s imports')
    for (const [name, file] of server) assert.ok(production.has(name), `${file} imports ${name}, which npm ci --omit=dev does not install`)
  })

  it('lists what `npm start` needs to bundle the page as production dependencies', () => {
    assert.ok(page.has('esbuild') && page.has('socket.io-client'))
    for (const [name, file] of page) assert.ok(production.has(name), `${file} imports ${name}, which npm ci --omit=dev does not install`)
  })

  it('keeps pm2, which the cluster and the image run, a production dependency', () => {
    assert.ok(production.has('pm2'))
  })

  it('keeps packages only the load test uses out of the production dependencies', () => {
    const needed = new Set([...server.keys(), ...page.keys(), 'pm2'])
    const loadtestOnly = [...loadtest.keys()].filter(name => !needed.has(name))
    assert.ok(loadtestOnly.includes('hdr-histogram-js') && loadtestOnly.includes('autocannon'), `found ${loadtestOnly}`)
    for (const name of loadtestOnly) {
      assert.ok(development.has(name), `${name} (load test only) is not a devDependency`)
      assert.ok(!production.has(name), `${name} (load test only) would be installed by npm ci --omit=dev`)
      // ws, say, comes with socket.io anyway; a package nothing in production pulls in must be dev-only.
      if (!pulledInByProduction(name)) assert.equal(lock.packages[`node_modules/${name}`]?.dev, true, `package-lock.json does not mark ${name} as dev`)
    }
  })

  it('has no production dependency that nothing loads', () => {
    const loaded = new Set([...server.keys(), ...page.keys(), 'pm2'])
    for (const name of production) assert.ok(loaded.has(name), `${name} is a dependency that nothing in server/, isomorphic/, scripts/ or the page loads`)
  })

  it('agrees with package-lock.json', () => {
    assert.deepEqual(lock.packages[''].dependencies, pkg.dependencies)
    assert.deepEqual(lock.packages[''].devDependencies, pkg.devDependencies)
  })

  it('names only Nodes that can require() the ESM ecosystem.config.js (20.19+, 22.12+, 23 and later)', () => {
    for (const range of pkg.engines.node.split('||')) {
      const [major, minor] = /^\s*(?:>=|\^)\s*(\d+)\.(\d+)/.exec(range)?.slice(1).map(Number) ?? []
      const canRequireEsm = major >= 23 || (major === 22 && minor >= 12) || (major === 20 && minor >= 19)
      assert.ok(canRequireEsm, `engines.node is ${pkg.engines.node}: ${range.trim()} allows a Node that cannot`)
    }
  })
})
