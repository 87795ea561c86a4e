import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { describe, it, before } from 'node:test'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

// Tandem as a package: what `import 'tandem'` and `import 'tandem/protocol'` give Node, a bundler
// and TypeScript, and what `npm publish` would put in the tarball: the server with its page built,
// not the page's sources or toolchain. The browser provider is its own package, @tandem/client
// (test/client-package.test.js).

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))

describe('the package', () => {
  before(async () => {
    await run('npm', ['run', 'build:types'], { cwd: ROOT })
    // As `npm start` does; `npm pack` builds it afresh (prepack).
    await run(process.execPath, ['client/build.js', '--if-missing'], { cwd: ROOT })
  })

  it('exports the server factory and the protocol, each with generated declarations', async () => {
    for (const [subpath, names] of /** @type {const} */ ([
      ['tandem', ['createServer']],
      ['tandem/server', ['createServer']],
      ['tandem/protocol', ['EVENTS', 'ERRORS', 'PARSER', 'DOC_ID_PATTERN']]
    ])) {
      // Self-reference through `exports`, as an application that installed the package resolves it.
      const module = await import(subpath)
      for (const name of names) assert.ok(name in module, `${subpath} exports ${name}`)
      const target = pkg.exports[subpath === 'tandem' ? '.' : `./${subpath.split('/')[1]}`]
      assert.ok(readFileSync(new URL(`../${target.types}`, import.meta.url), 'utf8').length > 0, `${target.types} was generated`)
    }
  })

  it('keeps tandem/protocol free of Node-only imports, so a browser bundle takes it', async () => {
    const esbuild = await import('esbuild')
    const result = await esbuild.build({
      stdin: { contents: "export * from 'tandem/protocol'", resolveDir: ROOT },
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      logLevel: 'silent'
    })
    assert.deepEqual(result.errors, [])
  })

  it('packs the server, the built page, the declarations and docs, and no page sources, tests, reports, load test, benchmarks or data', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT })
    const files = JSON.parse(stdout)[0].files.map((/** @type {{ path: string }} */ file) => file.path)
    for (const path of ['package.json', 'README.md', 'server/app.js', 'isomorphic/parser.js', 'isomorphic/protocol.js', 'client/dist/index.html',
      'client/dist/monaco.html', 'client/build.js', 'scripts/precompress.js', 'types/isomorphic/protocol.d.ts', 'types/server/app.d.ts', 'docs/PROTOCOL.md']) {
      assert.ok(files.includes(path), `${path} is not packed`)
    }
    assert.ok(files.some((/** @type {string} */ path) => /^client\/dist\/assets\/app-\w+\.js\.br$/.test(path)), 'the page\'s precompressed assets are not packed')
    const unwanted = files.filter((/** @type {string} */ path) => /^(test|reports|loadtest|bench|data|\.tmp|node_modules|client\/(src|static|lib)|types\/client)\//.test(path) ||
      /\.env$/.test(path) || path === 'client/package.json')
    assert.deepEqual(unwanted, [])
    // `npm pack` builds the page first, so an installed Tandem serves it without esbuild.
    assert.match(pkg.scripts.prepack, /npm run build\b/)
  })
})
