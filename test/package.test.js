import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, it, before } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

// Tandem as a package: what `import 'tandem/client'` gives a bundler, Node and TypeScript, and what
// `npm publish` would put in the tarball.

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
const TSC = `${ROOT}node_modules/typescript/bin/tsc`

describe('the package', () => {
  before(async () => {
    await run(process.execPath, [TSC, '-p', 'tsconfig.types.json'], { cwd: ROOT })
  })

  it('exports the server factory, the client and the protocol, each with generated declarations', async () => {
    for (const [subpath, names] of /** @type {const} */ ([
      ['tandem', ['createServer']],
      ['tandem/server', ['createServer']],
      ['tandem/client', ['SocketIOProvider', 'createSocket', 'STATUS']],
      ['tandem/protocol', ['EVENTS', 'ERRORS', 'PARSER', 'DOC_ID_PATTERN']]
    ])) {
      // Self-reference through `exports`, as an application that installed the package resolves it.
      const module = await import(subpath)
      for (const name of names) assert.ok(name in module, `${subpath} exports ${name}`)
      const target = pkg.exports[subpath === 'tandem' ? '.' : `./${subpath.split('/')[1]}`]
      assert.ok(readFileSync(new URL(`../${target.types}`, import.meta.url), 'utf8').length > 0, `${target.types} was generated`)
    }
  })

  it('keeps tandem/client and tandem/protocol free of Node-only imports, so a browser bundle takes them', async () => {
    const esbuild = await import('esbuild')
    const result = await esbuild.build({
      stdin: { contents: "export * from 'tandem/client'\nexport * from 'tandem/protocol'", resolveDir: ROOT },
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      logLevel: 'silent'
    })
    assert.deepEqual(result.errors, [])
  })

  it('compiles a TypeScript application against tandem/client and tandem/protocol, strict', async () => {
    const args = [TSC, '--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext',
      '--lib', 'es2022,dom', '--types', 'node', 'test/fixtures/consumer/consumer.ts']
    const errors = await run(process.execPath, args, { cwd: ROOT }).then(() => [], (/** @type {any} */ err) => String(err.stdout).split('\n').filter(Boolean))
    // The fixture's @ts-expect-error fails to compile unless the declarations type the constructor.
    assert.deepEqual(errors, [])
  })

  it('packs the code, its declarations and docs, and no tests, reports, load test, benchmarks or data', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT })
    const files = JSON.parse(stdout)[0].files.map((/** @type {{ path: string }} */ file) => file.path)
    for (const path of ['package.json', 'README.md', 'server/app.js', 'isomorphic/parser.js', 'isomorphic/protocol.js', 'client/src/index.js',
      'client/build.js', 'scripts/precompress.js', 'client/static/index.html', 'types/client/src/index.d.ts', 'types/isomorphic/protocol.d.ts', 'types/server/app.d.ts', 'docs/PROTOCOL.md']) {
      assert.ok(files.includes(path), `${path} is not packed`)
    }
    const unwanted = files.filter((/** @type {string} */ path) => /^(test|reports|loadtest|bench|data|\.tmp|client\/dist|node_modules)\//.test(path) || /\.env$/.test(path))
    assert.deepEqual(unwanted, [])
  })
})
