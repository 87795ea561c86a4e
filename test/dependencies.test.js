import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

// What a production install of Tandem holds must be enough for the server, which serves the page
// built at `npm pack` or image build time, and for `npm run cluster`; the page's toolchain and what
// only the load test and the benchmarks use stay out of it, as dev dependencies that `npm ci` still
// installs for `npm start` on a clone. The browser provider is a package of its own (client/,
// @tandem/client) whose dependencies are exactly what it and its wire code import. Checked from the
// sources' imports, not from memory.

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
const clientPkg = JSON.parse(readFileSync(join(ROOT, 'client/package.json'), 'utf8'))
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'))
const production = new Set(Object.keys(pkg.dependencies))
const development = new Set(Object.keys(pkg.devDependencies))
const clientDependencies = new Set([...Object.keys(clientPkg.dependencies), ...Object.keys(clientPkg.peerDependencies)])
const builtins = new Set(builtinModules)

/**
 * Every .js file under `dir` (or `dir` itself when it is a file); with `recursive: false`, those
 * directly in it.
 * @param {string} dir @returns {string[]}
 */
function sources (dir, { recursive = true } = {}) {
  const path = join(ROOT, dir)
  if (path.endsWith('.js')) return [path]
  return readdirSync(path, { withFileTypes: true, recursive })
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

/** @param {string[]} files @returns {Map<string, string>} package → a file that loads it */
function importsOf (files) {
  const found = new Map()
  for (const file of files) {
    for (const name of packagesOf(file)) if (!found.has(name)) found.set(name, file.slice(ROOT.length))
  }
  return found
}

/** Whether an installed production package depends on `name`. @param {string} name */
function pulledInByProduction (name) {
  return Object.entries(lock.packages).some(([path, entry]) => path !== '' && !entry.dev && name in (entry.dependencies ?? {}))
}

const server = importsOf(['server', 'isomorphic', 'scripts'].flatMap(dir => sources(dir)))
// What @tandem/client ships: the provider (client/src, without the page) and the wire code.
const provider = importsOf([...sources('client/src', { recursive: false }), ...sources('isomorphic')])
// The page `npm run build` bundles: esbuild and everything the bundle pulls in.
const page = importsOf(['client/src', 'isomorphic', 'client/build.js', 'client/bundle-size.js'].flatMap(dir => sources(dir)))
const loadtest = importsOf(['loadtest', 'bench'].flatMap(dir => sources(dir)))
// The page's toolchain: what builds it, not what serves it.
const PAGE_TOOLCHAIN = ['esbuild', 'monaco-editor', 'codemirror', 'y-codemirror.next', 'y-monaco']

describe('package.json', () => {
  it('lists every package the server imports as a production dependency', () => {
    assert.ok(server.size >= 10, 'the scan finds the server\'s imports')
    for (const [name, file] of server) assert.ok(production.has(name), `${file} imports ${name}, which npm ci --omit=dev does not install`)
  })

  it('keeps the page\'s toolchain out of the production dependencies, and npm ci installs it for `npm start`', () => {
    assert.ok(page.has('esbuild') && page.has('monaco-editor') && page.has('@codemirror/view'))
    for (const [name, file] of page) {
      assert.ok(production.has(name) || development.has(name) || clientDependencies.has(name), `${file} imports ${name}, which npm ci does not install`)
      if (PAGE_TOOLCHAIN.includes(name) || name.startsWith('@codemirror/')) assert.ok(!production.has(name), `${name} (builds the page) is a production dependency`)
    }
    for (const name of PAGE_TOOLCHAIN) assert.equal(lock.packages[`node_modules/${name}`]?.dev, true, `package-lock.json does not mark ${name} as dev`)
  })

  it('keeps pm2, which the cluster and the image run, a production dependency', () => {
    assert.ok(production.has('pm2'))
  })

  it('keeps packages only the load test uses out of the production dependencies', () => {
    const needed = new Set([...server.keys(), 'pm2'])
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
    const loaded = new Set([...server.keys(), 'pm2'])
    for (const name of production) assert.ok(loaded.has(name), `${name} is a dependency that nothing in server/, isomorphic/ or scripts/ loads`)
  })

  it('agrees with package-lock.json', () => {
    assert.deepEqual(lock.packages[''].dependencies, pkg.dependencies)
    assert.deepEqual(lock.packages[''].devDependencies, pkg.devDependencies)
    assert.deepEqual(lock.packages.client.dependencies, clientPkg.dependencies)
    assert.deepEqual(lock.packages.client.peerDependencies, clientPkg.peerDependencies)
  })

  it('gives @tandem/client exactly the packages the provider and its wire code import', () => {
    assert.ok(provider.has('yjs') && provider.has('socket.io-client'))
    assert.deepEqual([...clientDependencies].sort(), [...provider.keys()].sort())
    // One Y.Doc class in the application: yjs is the application's, as y-websocket and Hocuspocus have it.
    assert.ok('yjs' in clientPkg.peerDependencies && !('yjs' in clientPkg.dependencies))
  })

  it('names only Nodes that can require() the ESM ecosystem.config.js (20.19+, 22.12+, 23 and later)', () => {
    for (const range of pkg.engines.node.split('||')) {
      const [major, minor] = /^\s*(?:>=|\^)\s*(\d+)\.(\d+)/.exec(range)?.slice(1).map(Number) ?? []
      const canRequireEsm = major >= 23 || (major === 22 && minor >= 12) || (major === 20 && minor >= 19)
      assert.ok(canRequireEsm, `engines.node is ${pkg.engines.node}: ${range.trim()} allows a Node that cannot`)
    }
  })
})
