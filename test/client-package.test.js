import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { copyFile, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { openDoc } from './helpers/provider.js'
import { eventually } from './helpers/eventually.js'
import { contentOf, createSession, startServer } from './helpers/server.js'

// @tandem/client as a frontend takes it: `npm pack` in client/ (its prepack copies the provider and
// the wire code into lib/), installed from the tarball into a scratch project that has nothing else,
// then bundled for the browser, compiled against from TypeScript and run against a real server.

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const CONSUMER = join(ROOT, 'test/fixtures/consumer')
const run = promisify(execFile)
// What the install measured (docs/PROVIDER.md, "The package"), with room to grow: a dependency
// that pulls in a tree of its own, or a server package, breaks these.
const MAX_PACKAGES = 20
const MAX_INSTALL_BYTES = 15 * 1024 * 1024
const SERVER_SIDE = ['express', 'socket.io', 'pm2', 'classic-level', 'ioredis', 'esbuild', 'monaco-editor', 'codemirror', 'tandem']

/** Bytes of the files under `dir` (their sizes, not the disk blocks they take). @param {string} dir */
async function sizeOf (dir) {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true })
  const sizes = await Promise.all(entries.filter(entry => entry.isFile()).map(async entry => (await stat(join(entry.parentPath, entry.name))).size))
  return sizes.reduce((sum, size) => sum + size, 0)
}

describe('@tandem/client, installed from its packed tarball', () => {
  /** @type {string} */
  let scratch
  /** @type {string[]} */
  let packed

  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'tandem-client-'))
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: join(ROOT, 'client'), timeout: 30_000 })
    const [{ filename, files }] = JSON.parse(stdout)
    packed = files.map((/** @type {{ path: string }} */ file) => file.path)
    await writeFile(join(scratch, 'package.json'), JSON.stringify({ name: 'frontend', private: true, type: 'module' }))
    // The npm cache holds these packages already; the registry is asked only for what it lacks.
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', join(scratch, filename)], { cwd: scratch, timeout: 60_000 })
  })
  after(async () => { if (scratch) await rm(scratch, { recursive: true, force: true }) })

  it('packs the provider, the wire code and their declarations, and no page, build script or test', () => {
    for (const path of ['package.json', 'README.md', 'lib/client/src/index.js', 'lib/client/src/index.d.ts', 'lib/client/src/provider.js',
      'lib/isomorphic/parser.js', 'lib/isomorphic/protocol.js', 'lib/isomorphic/protocol.d.ts']) {
      assert.ok(packed.includes(path), `${path} is not packed`)
    }
    assert.deepEqual(packed.filter(path => !/^(package\.json|README\.md|lib\/(client\/src|isomorphic)\/[\w-]+\.(js|d\.ts))$/.test(path)), [])
  })

  it(`installs its dependencies and yjs only: at most ${MAX_PACKAGES} packages and ${MAX_INSTALL_BYTES / 1024 / 1024} MB`, async () => {
    const lock = JSON.parse(await readFile(join(scratch, 'node_modules/.package-lock.json'), 'utf8'))
    const names = Object.keys(lock.packages).filter(Boolean).map(path => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))
    assert.ok(names.includes('@tandem/client') && names.includes('yjs') && names.includes('socket.io-client'), `installed ${names}`)
    assert.deepEqual(names.filter(name => SERVER_SIDE.includes(name)), [])
    assert.ok(names.length <= MAX_PACKAGES, `${names.length} packages: ${names}`)
    const bytes = await sizeOf(join(scratch, 'node_modules'))
    assert.ok(bytes <= MAX_INSTALL_BYTES, `${(bytes / 1024 / 1024).toFixed(1)} MB installed`)
  })

  it('bundles for the browser with esbuild, from the install alone and with one copy of yjs', async () => {
    const esbuild = await import('esbuild')
    const result = await esbuild.build({
      stdin: {
        contents: "export { SocketIOProvider, STATUS, createSocket } from '@tandem/client'\nexport { ERRORS, EVENTS } from '@tandem/client/protocol'\nexport * as Y from 'yjs'",
        resolveDir: scratch
      },
      absWorkingDir: scratch,
      bundle: true,
      platform: 'browser',
      format: 'esm',
      minify: true,
      write: false,
      metafile: true,
      logLevel: 'silent'
    })
    // A Node built-in would be an error here: esbuild resolves none for the browser.
    assert.deepEqual(result.errors, [])
    const inputs = Object.keys(result.metafile.inputs).filter(path => path !== '<stdin>')
    assert.deepEqual(inputs.filter(path => !path.startsWith('node_modules/')), [], 'the bundle reaches outside the install')
    assert.deepEqual([...new Set(inputs.filter(path => path.includes('node_modules/yjs/')).map(path => path.replace(/\/yjs\/.*/, '/yjs')))], ['node_modules/yjs'])
  })

  it('compiles a strict TypeScript application against its declarations', async () => {
    await copyFile(join(CONSUMER, 'consumer.ts'), join(scratch, 'consumer.ts'))
    // No Node types: the declarations must stand on the DOM's.
    await writeFile(join(scratch, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { strict: true, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'], types: [] },
      files: ['consumer.ts']
    }))
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
    const errors = await run(process.execPath, [tsc, '-p', scratch], { cwd: scratch }).then(() => [], (/** @type {any} */ err) => String(err.stdout).split('\n').filter(Boolean))
    // The fixture's @ts-expect-error fails to compile unless the declarations type the constructor.
    assert.deepEqual(errors, [])
  })

  it('edits a document on a real server with another editor, both ways', async (t) => {
    const tandem = await startServer()
    t.after(() => tandem.close())
    const { id } = await createSession(tandem.url)
    const other = openDoc(tandem.url, id)
    t.after(() => other.destroy())
    other.append('typed in this repository;')
    await eventually(() => other.settled(), { what: 'the first edit acknowledged' })

    await copyFile(join(CONSUMER, 'edit.mjs'), join(scratch, 'edit.mjs'))
    const { stdout } = await run(process.execPath, ['edit.mjs', tandem.url, id, 'typed in this repository;', ' typed through the tarball'], { cwd: scratch, timeout: 20_000 })
    const expected = 'typed in this repository; typed through the tarball'
    assert.deepEqual(JSON.parse(stdout), { text: expected })
    await eventually(() => other.text() === expected, { what: 'the other editor seeing the edit' })
    assert.equal(await contentOf(tandem.url, id), expected)
  })
})
