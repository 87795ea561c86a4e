import assert from 'node:assert/strict'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { ESLint } from 'eslint'

// isomorphic/ runs unchanged in browsers and in Node. The lint rules of eslint.config.js keep it so
// as it is edited; these tests show that they refuse what they must (and no more), and that the
// folder, with the packages it imports, bundles for the browser. The same rules keep imports
// between the other folders pointing one way; the checks below show that each of those bites.

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const eslint = new ESLint({ cwd: ROOT })

/**
 * The rule ids ESLint reports for `code` as if it were the file at `path`.
 * @param {string} path relative to the repository
 * @param {string} code
 */
async function lint (path, code) {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) })
  return result.messages.map(message => message.ruleId)
}

describe('isomorphic/', () => {
  it('refuses Node built-in modules, with or without the node: prefix', async () => {
    for (const specifier of ['node:fs', 'crypto', 'fs/promises', 'events']) {
      const rules = await lint('isomorphic/snippet.js', `import * as builtin from '${specifier}'\nexport { builtin }\n`)
      assert.deepEqual(rules, ['no-restricted-imports'], specifier)
    }
  })

  it('refuses imports from the rest of the repository', async () => {
    const rules = await lint('isomorphic/snippet.js', "import { AppError } from '../server/errors.js'\nexport { AppError }\n")
    assert.deepEqual(rules, ['no-restricted-imports'])
  })

  it('refuses Node globals', async () => {
    const rules = await lint('isomorphic/snippet.js', "export const bytes = Buffer.from(process.env.KEY ?? '')\n")
    assert.deepEqual(rules, ['no-restricted-globals', 'no-restricted-globals'])
  })

  it('accepts its own files and the packages it bundles', async () => {
    const code = "import { Emitter } from '@socket.io/component-emitter'\nimport { EVENTS } from './events.js'\nexport const emitter = new Emitter().on(EVENTS.UPDATE, () => {})\n"
    assert.deepEqual(await lint('isomorphic/snippet.js', code), [])
  })

  it('is where the browser client takes wire code from, never server/', async () => {
    assert.deepEqual(await lint('client/src/snippet.js', "import { AppError } from '../../server/errors.js'\nexport { AppError }\n"), ['no-restricted-imports'])
    assert.deepEqual(await lint('client/src/snippet.js', "import { EVENTS } from '../../isomorphic/events.js'\nexport { EVENTS }\n"), [])
  })

  it('bundles for the browser, every file of it, from nothing outside it but packages', async () => {
    const esbuild = await import('esbuild')
    const entryPoints = readdirSync(join(ROOT, 'isomorphic')).filter(name => name.endsWith('.js')).map(name => join(ROOT, 'isomorphic', name))
    assert.ok(entryPoints.length >= 5, `found ${entryPoints}`)
    const result = await esbuild.build({ entryPoints, bundle: true, platform: 'browser', format: 'esm', outdir: 'out', write: false, metafile: true, logLevel: 'silent', absWorkingDir: ROOT })
    assert.deepEqual(result.errors, [])
    assert.deepEqual(result.warnings, [])
    const outside = Object.keys(result.metafile.inputs).filter(path => !path.startsWith('isomorphic/') && !path.includes('node_modules/'))
    assert.deepEqual(outside, [])
  })
})

describe('server/', () => {
  it('imports nothing from client/, loadtest/, bench/ or test/, and takes what it shares with the build from scripts/', async () => {
    for (const [path, specifier] of [['server/http/snippet.js', '../../client/build.js'], ['server/snippet.js', '../client/src/index.js'],
      ['server/realtime/snippet.js', '../../loadtest/spawn.js'], ['server/snippet.js', '../bench/index.js'], ['server/snippet.js', '../test/helpers/server.js']]) {
      assert.deepEqual(await lint(path, `import * as part from '${specifier}'\nexport { part }\n`), ['no-restricted-imports'], specifier)
    }
    assert.deepEqual(await lint('server/http/snippet.js', "import { ENCODINGS } from '../../scripts/precompress.js'\nexport { ENCODINGS }\n"), [])
  })
})

describe('loadtest/', () => {
  it('imports nothing from server/, bench/ or test/, while the shipped client and the wire code are its to use', async () => {
    for (const [path, specifier] of [['loadtest/snippet.js', '../server/config.js'], ['loadtest/protocols/snippet.js', '../../server/documents/accept-update.js'],
      ['loadtest/snippet.js', '../bench/quiet.js'], ['loadtest/snippet.js', '../test/helpers/at-end.js']]) {
      assert.deepEqual(await lint(path, `import * as part from '${specifier}'\nexport { part }\n`), ['no-restricted-imports'], specifier)
    }
    assert.deepEqual(await lint('loadtest/protocols/snippet.js', "import * as part from '../../client/src/socket.js'\nexport { part }\n"), [])
    assert.deepEqual(await lint('loadtest/snippet.js', "import * as part from '../isomorphic/events.js'\nexport { part }\n"), [])
  })
})

describe('bench/', () => {
  it('may import the server\'s internals and the load test\'s parts, and nothing from test/, while the tests may import from it', async () => {
    assert.deepEqual(await lint('bench/snippet.js', "import * as part from '../server/documents/accept-update.js'\nexport { part }\n"), [])
    assert.deepEqual(await lint('bench/peers/snippet.js', "import * as part from '../../loadtest/histogram.js'\nexport { part }\n"), [])
    assert.deepEqual(await lint('bench/snippet.js', "import * as part from '../test/helpers/server.js'\nexport { part }\n"), ['no-restricted-imports'])
    assert.deepEqual(await lint('test/helpers/snippet.js', "import * as part from '../../bench/quiet.js'\nexport { part }\n"), [])
    assert.deepEqual(await lint('test/helpers/snippet.js', "import * as part from '../../loadtest/spawn.js'\nexport { part }\n"), [])
  })
})
