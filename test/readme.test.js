import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, it } from 'node:test'
import { ENVIRONMENT, loadConfig } from '../server/config.js'
import { ERRORS } from '../isomorphic/error-codes.js'
import { defaultOptions } from '../loadtest/options.js'
import { plannedTime } from '../loadtest/planned-time.js'
import { formatDuration } from '../loadtest/report/format.js'
import { DEFAULT_OPTIONS } from '../client/src/provider-options.js'
import { tableAfter as markdownTable } from './helpers/markdown.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
// What PM2 sets for each worker, not an operator.
const SET_BY_PM2 = ['NODE_APP_INSTANCE', 'exec_mode']
/** The .js files under `dir`, as paths from the root. @param {string} dir */
const sourcesUnder = dir => readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' }).filter(file => file.endsWith('.js')).map(file => `${dir}/${file}`)
const read = (/** @type {string} */ path) => readFile(new URL(`../${path}`, import.meta.url), 'utf8')
const readme = await read('README.md')
const configuration = await read('docs/CONFIGURATION.md')
const security = await read('docs/SECURITY.md')
const api = await read('docs/API.md')
const clientReadme = await read('client/README.md')

/**
 * Rows of the table after `heading` in `markdown`, with code cells unquoted.
 * @param {string} markdown
 * @param {string} heading
 */
function tableAfter (markdown, heading) {
  assert.ok(markdown.includes(`\n${heading}\n`), `no "${heading}" section`)
  return markdownTable(markdown, `\n${heading}\n`).map(row => row.map(cell => cell.replace(/^`|`$/g, '')))
}

/** `METHOD /path` of every route the route modules register, under the prefix app.js mounts each at. */
async function registeredRoutes () {
  const app = await read('server/app.js')
  const mounts = new Map([...app.matchAll(/app\.use\((?:'([^']*)',[^\n]*?)?(\w+Routes)\(/g)].map(([, prefix, name]) => [name, prefix ?? '']))
  const files = { healthRoutes: 'health-routes.js', sessionsRoutes: 'sessions-routes.js', contentRoutes: 'content-routes.js', historyRoutes: 'history-routes.js', metricsRoutes: 'metrics-routes.js' }
  const routes = []
  for (const [name, file] of Object.entries(files)) {
    assert.ok(mounts.has(name), `server/app.js mounts no ${name}`)
    const source = await read(`server/http/${file}`)
    for (const [, method, path] of source.matchAll(/router\.(get|post|patch|put|delete)\('([^']*)'/g)) {
      routes.push(`${method.toUpperCase()} ${(mounts.get(name) + path).replace(/(.)\/$/, '$1')}`)
    }
  }
  return routes.sort()
}

describe('README and the tables of docs/', () => {
  it('lists exactly the error codes of the registry, with their statuses (docs/API.md)', () => {
    const documented = tableAfter(api, '## Errors').map(([code, status, retry, meaning]) => ({ code, status: Number(status), retry: retry === 'yes', meaning }))
    const registry = Object.entries(ERRORS).map(([code, { status, retry, description }]) => ({ code, status, retry, meaning: description }))
    assert.deepEqual(documented, registry)
  })

  it('lists exactly the REST routes the server registers (docs/API.md)', async () => {
    const documented = tableAfter(api, '## REST API').map(([route]) => route.replace(/\?.*$/, ''))
    assert.deepEqual([...documented].sort(), await registeredRoutes())
  })

  it('lists exactly the provider\'s options, with their defaults (client/README.md)', async () => {
    const documented = tableAfter(clientReadme, '### Options')
    // The names ProviderOptions declares, from its JSDoc.
    const declared = [...(await read('client/src/provider-options.js')).matchAll(/@property \{[^\n]*\} \[(\w+)\]/g)].map(([, name]) => name)
    assert.deepEqual(documented.map(([name]) => name), declared)
    const shown = (/** @type {unknown} */ value) => Array.isArray(value) ? `[${value.map(item => `'${item}'`).join(', ')}]` : String(value)
    for (const [name, value] of Object.entries(DEFAULT_OPTIONS)) {
      assert.equal(documented.find(([documentedName]) => documentedName === name)?.[1], shown(value), name)
    }
  })

  it('lists the environment variables the config reads first, in its order, with their defaults (docs/CONFIGURATION.md)', () => {
    const documented = tableAfter(configuration, '## Environment variables').map(([env, value]) => ({ env, default: value }))
    assert.deepEqual(documented.slice(0, ENVIRONMENT.length), ENVIRONMENT.map(({ env, default: value }) => ({ env, default: value })))
  })

  it('then every other variable read from process.env, with its default, and nothing else (docs/CONFIGURATION.md)', async () => {
    const sources = await Promise.all(['ecosystem.config.js', ...sourcesUnder('server'), ...sourcesUnder('scripts')].map(read))
    /** @type {Map<string, string>} variable → the default its reader gives it */
    const readElsewhere = new Map()
    for (const source of sources) {
      for (const [, name, fallback] of source.matchAll(/process\.env\.(\w+)(?: \?\? '([^']*)')?/g)) {
        if (!SET_BY_PM2.includes(name)) readElsewhere.set(name, fallback ?? '')
      }
    }
    assert.ok(readElsewhere.has('WORKERS'), 'the scan finds what ecosystem.config.js reads')
    const others = tableAfter(configuration, '## Environment variables').slice(ENVIRONMENT.length).map(([env, value]) => [env, value])
    assert.deepEqual(others, [...readElsewhere].filter(([name]) => !ENVIRONMENT.some(({ env }) => env === name)))
  })

  it('gives each limit of docs/SECURITY.md the default the config has', () => {
    const defaults = new Map(ENVIRONMENT.map(({ env, default: value }) => [env, value]))
    const limits = tableAfter(security, '## Limits')
    assert.ok(limits.length >= 10)
    for (const [limit, setting, value] of limits) {
      if (setting === 'fixed') continue
      assert.equal(value, defaults.get(setting), `${limit}: ${setting}`)
    }
    assert.ok(limits.every(row => row.length === 4), 'every row has its four cells')
  })

  it('says the same of CORS_ORIGIN in README, SECURITY, CONFIGURATION and PROTOCOL, as the config has it', async () => {
    assert.equal(loadConfig({}).corsOrigin, 'same-origin')
    assert.equal(loadConfig({ AUTH_SECRET: 'a-secret-of-at-least-32-characters!', API_KEY: 'an-api-key-of-16+' }).corsOrigin, '*')
    const said = "`CORS_ORIGIN` defaults to `same-origin` while auth is off and to `*` once it is on, and the server's own origin is always allowed"
    for (const path of ['README.md', 'docs/SECURITY.md', 'docs/CONFIGURATION.md', 'docs/PROTOCOL.md']) {
      assert.ok((await read(path)).replace(/\s+/g, ' ').includes(said), `${path} does not say: ${said}`)
    }
  })

  it('keeps one capacity table, dated, with its command; the measurement history lives in docs/PERFORMANCE.md', async () => {
    const lines = readme.split('\n')
    const latencyTables = lines.filter((line, i) => /^\| .*ACK p99/.test(line) && lines[i + 1]?.startsWith('|---'))
    assert.equal(latencyTables.length, 1, 'one table of latency figures')
    const capacity = readme.slice(readme.indexOf('## Capacity'), readme.indexOf('\n## ', readme.indexOf('## Capacity') + 1))
    assert.match(capacity, /Measured on \d{4}-\d{2}-\d{2}/)
    assert.match(capacity, /`npm run loadtest -- --runs \d+ [^`]+`/)
    // Moved, not retyped: each row's ACK p50 and p99 stand in a dated table of docs/PERFORMANCE.md.
    const performance = await read('docs/PERFORMANCE.md')
    const rows = tableAfter(readme, '## Capacity')
    assert.ok(rows.length >= 5)
    for (const [, editors, ackP50, ackP99] of rows) {
      assert.ok(performance.includes(`| ${editors} | ${ackP50} ms | ${ackP99} ms |`), `${editors} editors: ${ackP50}/${ackP99} ms not in docs/PERFORMANCE.md`)
    }
  })

  it('tells how to read the logs with a command that works after npm ci', async () => {
    assert.match(readme, /npm start \| npx pino-pretty/)
    assert.match(configuration, /npm start \| npx pino-pretty/)
    // npx runs a package the project installed without asking; one it would have to download, it
    // asks about, and without a terminal to answer on it cancels ("npx canceled due to missing packages").
    assert.ok(JSON.parse(await read('package.json')).devDependencies['pino-pretty'], 'pino-pretty is not a devDependency')
    const line = JSON.stringify({ level: 30, time: 0, pid: 1, hostname: 'h', msg: 'listening' })
    const pretty = await new Promise((resolve, reject) => {
      const npx = execFile('npx', ['--no', 'pino-pretty', '--colorize', 'false'], { cwd: ROOT, timeout: 60000 }, (err, stdout) => err ? reject(err) : resolve(stdout))
      npx.stdin?.end(line + '\n')
    })
    assert.match(pretty, /INFO \(1\): listening/)
  })

  it('says how long the load test takes at the defaults, as the defaults add up (README, docs/LOADTEST.md)', async () => {
    const { ms, breakdown } = plannedTime(defaultOptions())
    const prose = (/** @type {string} */ text) => text.replace(/\s+/g, ' ')
    assert.ok(prose(await read('docs/LOADTEST.md')).includes(`At the defaults a run edits and measures for ${formatDuration(ms)} (${breakdown},`), 'docs/LOADTEST.md')
    assert.ok(prose(readme).includes(`at the defaults ${formatDuration(ms)} of editing and measuring`), 'README.md')
  })

  it('shows the two commands a newcomer needs', () => {
    assert.match(readme, /npm ci && npm start/)
    assert.match(readme, /npm test/)
  })
})
