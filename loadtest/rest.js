import { createRequire } from 'node:module'
import { mapLimit } from './api.js'

/**
 * @typedef {{ p50: number, p90: number, p99: number, max: number, total: number }} Percentiles
 * @typedef {{ method: string, path: string, headers: Record<string, string>, body?: string, onResponse?: (status: number, body: string) => void, setupRequest?: (request: AutocannonRequest) => AutocannonRequest }} AutocannonRequest
 * @typedef {{ url: string, connections: number, duration: number, maxOverallRequests?: number, requests: AutocannonRequest[] }} AutocannonOptions
 * @typedef {{ requests: Percentiles, latency: Percentiles, duration: number, errors: number, non2xx: number }} AutocannonResult
 */

// autocannon ships no types, and tsc (checkJs through jsconfig.json) would type-check its sources if
// it were imported; loading it through require keeps it opaque, typed by the part of its API used here.
/** @type {(options: AutocannonOptions) => Promise<AutocannonResult>} */
const autocannon = createRequire(import.meta.url)('autocannon')

// The REST section: autocannon against the session API, one endpoint at a time so each figure is
// that endpoint alone. Creating is bounded by count as well as time, and what it created is deleted.
// Replacing the text works on a session of its own, never one editors type in: each request
// changes one line of it, as a formatter or a bot would. Reading that text as it was halfway
// through the PUTs comes right after them, so history holds many updates before the time asked for.

const CONNECTIONS = 10
/** The endpoints measured, one after another, each for the section's duration. */
export const REST_ENDPOINTS = Object.freeze(['POST /api/sessions', 'GET /api/sessions/:id', 'GET /api/sessions', 'GET /api/health', 'PUT /api/sessions/:id/content',
  'GET /api/sessions/:id/content?at='])
const MAX_CREATES = 2000
const CLEANUP_CONCURRENCY = 8
const PROBE_TIMEOUT_MS = 30000
/** The text each PUT sends, but for its last line. */
const CONTENT_LINES = Array.from({ length: 40 }, (_, i) => `  const line${i} = compute(${i})\n`).join('')

/** The text of the `n`th PUT: one line differs from the one before. @param {number} n */
const contentOf = n => `${CONTENT_LINES}// request ${n}\n`

/**
 * An endpoint that was not measured has `skipped` say why, and null for every figure.
 * @typedef {object} RestResult
 * @property {string} endpoint
 * @property {string | null} skipped why the endpoint was not measured; null when it was
 * @property {number | null} requests completed
 * @property {number | null} requestsPerSecond
 * @property {{ p50: number, p90: number, p99: number, max: number } | null} latencyMs autocannon's, 1 ms resolution
 * @property {number | null} errors connection errors and timeouts
 * @property {number | null} non2xx
 */

/**
 * @typedef {object} EndpointSpec
 * @property {string} endpoint
 * @property {'GET' | 'POST' | 'PUT'} method
 * @property {string} path
 * @property {string} [body]
 * @property {number} [maxOverallRequests]
 * @property {(status: number, body: string) => void} [onResponse]
 * @property {(request: AutocannonRequest) => AutocannonRequest} [setupRequest]
 */

/**
 * @param {import('./api.js').TandemApi} api
 * @param {{ durationMs: number }} options
 * @returns {Promise<RestResult[]>}
 */
export async function runRest (api, { durationMs }) {
  const { id } = await api.createSession({ name: 'loadtest rest' })
  /** @type {string[]} */
  const created = [id]
  const body = JSON.stringify({ name: 'loadtest rest', language: 'javascript' })
  const content = await api.createSession({ name: 'loadtest rest content', content: contentOf(0) })
  created.push(content.id)
  let puts = 0
  const [create, get, list, health, replace, readAt] = REST_ENDPOINTS
  /** @type {EndpointSpec[]} */
  const endpoints = [
    {
      endpoint: create,
      method: 'POST',
      path: '/api/sessions',
      body,
      maxOverallRequests: MAX_CREATES,
      onResponse: (status, text) => { if (status === 201) created.push(JSON.parse(text).id) }
    },
    { endpoint: get, method: 'GET', path: `/api/sessions/${id}` },
    { endpoint: list, method: 'GET', path: '/api/sessions?limit=20' },
    { endpoint: health, method: 'GET', path: '/api/health' }
  ]
  try {
    /** @type {RestResult[]} */
    const results = []
    for (const spec of endpoints) results.push(await measure(api, spec, durationMs))
    const putsFrom = Date.now()
    results.push(await measure(api, {
      endpoint: replace,
      method: 'PUT',
      path: `/api/sessions/${content.id}/content`,
      body: JSON.stringify({ text: contentOf(0) }),
      setupRequest: request => ({ ...request, body: JSON.stringify({ text: contentOf(++puts) }) })
    }, durationMs))
    // History is stamped by the server's clock: halfway through the PUTs by this one is within them
    // while the two clocks agree to within half the phase, as on one machine.
    const at = new Date((putsFrom + Date.now()) / 2).toISOString()
    /** @type {EndpointSpec} */
    const past = { endpoint: readAt, method: 'GET', path: `/api/sessions/${content.id}/content?at=${encodeURIComponent(at)}` }
    // A server that keeps no history answers every such read 410 HISTORY_GONE: one refusal tells,
    // and thousands more would only time the error.
    const refusal = await refusalOf(api, past.path)
    results.push(refusal === null ? await measure(api, past, durationMs) : skipped(readAt, refusal))
    return results
  } finally {
    await mapLimit(created, CLEANUP_CONCURRENCY, session => api.deleteSession(session).catch(() => {}))
  }
}

/**
 * autocannon on one endpoint for `durationMs` (or its `maxOverallRequests`, if sooner).
 * @param {import('./api.js').TandemApi} api
 * @param {EndpointSpec} spec
 * @param {number} durationMs
 * @returns {Promise<RestResult>}
 */
async function measure (api, { endpoint, method, path, body, maxOverallRequests, onResponse, setupRequest }, durationMs) {
  const result = await autocannon({
    url: api.url,
    connections: CONNECTIONS,
    duration: durationMs / 1000,
    ...(maxOverallRequests ? { maxOverallRequests } : {}),
    requests: [{
      method,
      path,
      headers: { ...api.headers, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body } : {}),
      ...(onResponse ? { onResponse } : {}),
      ...(setupRequest ? { setupRequest } : {})
    }]
  })
  return {
    endpoint,
    skipped: null,
    requests: result.requests.total,
    requestsPerSecond: result.requests.total / result.duration,
    latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    errors: result.errors,
    non2xx: result.non2xx
  }
}

/** @param {string} endpoint @param {string} reason @returns {RestResult} */
const skipped = (endpoint, reason) => ({ endpoint, skipped: reason, requests: null, requestsPerSecond: null, latencyMs: null, errors: null, non2xx: null })

/**
 * Null when one GET of `path` succeeds; else what the server answered, as the reason not to measure it.
 * @param {import('./api.js').TandemApi} api
 * @param {string} path
 */
async function refusalOf (api, path) {
  const res = await fetch(api.url + path, { headers: api.headers, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) })
  const text = await res.text()
  if (res.ok) return null
  /** @type {{ code?: string, message?: string } | undefined} */
  let error
  try { error = JSON.parse(text).error } catch {}
  return `a first request answered ${res.status}${error?.code ? ` ${error.code}` : ''}: ${error?.message ?? text.slice(0, 200)}`
}
