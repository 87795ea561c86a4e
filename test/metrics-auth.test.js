import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { ConfigError, loadConfig } from '../server/config.js'
import { api, startServer } from './helpers/server.js'

const METRICS_TOKEN = 'a-metrics-token-0123456789'
const AUTH_SECRET = 'a-test-secret-that-is-at-least-32-characters'
const API_KEY = 'test-api-key-0123456789'

describe('/metrics with METRICS_TOKEN', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  before(async () => { tandem = await startServer({ metricsToken: METRICS_TOKEN, apiKey: API_KEY }) })
  after(() => tandem.close())

  it('refuses a scrape without a token with 401 UNAUTHORIZED', async () => {
    const res = await api(tandem.url, '/metrics')
    assert.equal(res.status, 401)
    assert.equal(res.body.error.code, 'UNAUTHORIZED')
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/)
  })

  it('refuses a wrong token, and the API key, with 401', async () => {
    for (const token of ['a-metrics-token-0123456780', 'short', API_KEY]) {
      const res = await api(tandem.url, '/metrics', { headers: { authorization: `Bearer ${token}` } })
      assert.equal(res.status, 401, token)
      assert.equal(res.body.error.code, 'UNAUTHORIZED')
    }
  })

  it('serves the scrape to the token', async () => {
    const res = await api(tandem.url, '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    assert.equal(res.status, 200)
    assert.match(res.body, /^process_resident_memory_bytes\{/m)
  })

  it('serves prom-client\'s JSON of the same series to a client that asks for JSON, and text to Prometheus', async () => {
    const authorization = `Bearer ${METRICS_TOKEN}`
    const json = await api(tandem.url, '/metrics', { headers: { authorization, accept: 'application/json' } })
    assert.equal(json.status, 200)
    assert.match(json.headers.get('content-type') ?? '', /^application\/json/)
    const rss = json.body.find((/** @type {any} */ metric) => metric.name === 'process_resident_memory_bytes')
    assert.ok(rss.values[0].value > 0)
    assert.ok(json.body.some((/** @type {any} */ metric) => metric.name === 'tandem_documents_loaded'))
    // Prometheus's own Accept header: OpenMetrics first, then the text format, then anything.
    const prometheus = 'application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.2'
    const text = await api(tandem.url, '/metrics', { headers: { authorization, accept: prometheus } })
    assert.match(text.headers.get('content-type') ?? '', /^text\/plain/)
    assert.match(text.body, /^tandem_documents_loaded\{/m)
  })
})

describe('/metrics with METRICS_PUBLIC=true', () => {
  it('serves the scrape without a token', async () => {
    const tandem = await startServer({ metricsPublic: true })
    const res = await api(tandem.url, '/metrics')
    assert.equal(res.status, 200)
    assert.match(res.body, /^tandem_connections\{/m)
    await tandem.close()
  })
})

describe('METRICS_TOKEN and METRICS_PUBLIC at start-up', () => {
  const production = { NODE_ENV: 'production', AUTH_SECRET, API_KEY }

  it('refuses to start in production with /metrics neither guarded nor declared public', () => {
    assert.throws(() => loadConfig(production), (/** @type {Error} */ err) => {
      assert.ok(err instanceof ConfigError)
      assert.match(err.message, /METRICS_TOKEN/)
      return true
    })
    assert.doesNotThrow(() => loadConfig({ ...production, METRICS_TOKEN }))
    assert.doesNotThrow(() => loadConfig({ ...production, METRICS_PUBLIC: 'true' }))
  })

  it('refuses a short token without echoing it, and both settings at once', () => {
    assert.throws(() => loadConfig({ METRICS_TOKEN: 'short-token' }), /METRICS_TOKEN=\(hidden\) is invalid: must be at least 16 characters/)
    assert.throws(() => loadConfig({ METRICS_TOKEN, METRICS_PUBLIC: 'true' }), /contradict/)
  })
})
