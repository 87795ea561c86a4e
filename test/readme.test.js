import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { describe, it } from 'node:test'
import { ENVIRONMENT } from '../server/config.js'
import { ERRORS } from '../isomorphic/error-codes.js'
import { tableAfter as markdownTable } from './helpers/markdown.js'

const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')

/** README table rows after `heading`, with code cells unquoted. @param {string} heading */
const tableAfter = heading => markdownTable(readme, heading).map(row => row.map(cell => cell.replace(/^`|`$/g, '')))

describe('README', () => {
  it('lists exactly the error codes of the registry, with their statuses', () => {
    const documented = tableAfter('## Errors').map(([code, status, retry, meaning]) => ({ code, status: Number(status), retry: retry === 'yes', meaning }))
    const registry = Object.entries(ERRORS).map(([code, { status, retry, description }]) => ({ code, status, retry, meaning: description }))
    assert.deepEqual(documented, registry)
  })

  it('lists exactly the environment variables the config reads, with their defaults', () => {
    const documented = tableAfter('## Configuration').map(([env, value]) => ({ env, default: value }))
    assert.deepEqual(documented, ENVIRONMENT.map(({ env, default: value }) => ({ env, default: value })))
  })

  it('gives each limit of the Security section the default the config has', () => {
    const defaults = new Map(ENVIRONMENT.map(({ env, default: value }) => [env, value]))
    const limits = tableAfter('## Security')
    assert.ok(limits.length >= 10)
    for (const [limit, setting, value] of limits) {
      if (setting === 'fixed') continue
      assert.equal(value, defaults.get(setting), `${limit}: ${setting}`)
    }
    assert.ok(limits.every(row => row.length === 4), 'every row has its four cells')
  })

  it('keeps one capacity table, dated, with its command; the measurement history lives in docs/PERFORMANCE.md', async () => {
    const lines = readme.split('\n')
    const latencyTables = lines.filter((line, i) => /^\| .*ACK p99/.test(line) && lines[i + 1]?.startsWith('|---'))
    assert.equal(latencyTables.length, 1, 'one table of latency figures')
    const capacity = readme.slice(readme.indexOf('## Capacity'), readme.indexOf('\n## ', readme.indexOf('## Capacity') + 1))
    assert.match(capacity, /Measured on \d{4}-\d{2}-\d{2}/)
    assert.match(capacity, /`npm run loadtest -- --runs \d+ [^`]+`/)
    // Moved, not retyped: each row's ACK p50 and p99 stand in a dated table of docs/PERFORMANCE.md.
    const performance = await readFile(new URL('../docs/PERFORMANCE.md', import.meta.url), 'utf8')
    const rows = tableAfter('## Capacity')
    assert.ok(rows.length >= 5)
    for (const [, editors, ackP50, ackP99] of rows) {
      assert.ok(performance.includes(`| ${editors} | ${ackP50} ms | ${ackP99} ms |`), `${editors} editors: ${ackP50}/${ackP99} ms not in docs/PERFORMANCE.md`)
    }
  })

  it('tells how to read the logs', () => {
    assert.match(readme, /npm start \| npx pino-pretty/)
  })

  it('shows the two commands a newcomer needs', () => {
    assert.match(readme, /npm ci && npm start/)
    assert.match(readme, /npm test/)
  })
})
