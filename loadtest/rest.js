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
// changes one line of it, as a formatter or a bot would.

const CONNECTIONS = 10
/** The endpoints measured, one after another, each for the section's duration. */
export const REST_ENDPOINTS = Object.freeze(['POST /api/sessions', 'GET /api/sessions/:id', 'GET /api/sessions', 'GET /api/health', 'PUT /api/sessions/:id/content'])
const MAX_CREATES = 2000
const CLEANUP_CONCURRENCY = 8
/** The text each PUT sends, but for its last line. */
const CONTENT_LINES = Array.from({ length: 40 }, (_, i) => `  const line${i} = compute(${i})\n`).join('')

/** The text of the `n`th PUT: one line differs from the one before. @param {number} n */
const contentOf = n => `${CONTENT_LINES}// request ${n}\n`

/**
 * @typedef {object} RestResult
 * @property {string} endpoint
 * @property {number} requests completed
 * @property {number} requestsPerSecond
 * @property {{ p50: number, p90: number, p99: number, max: number }} latencyMs autocannon's, 1 ms resolution
 * @property {number} errors connection errors and timeouts
 * @property {number} non2xx
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
  const [create, get, list, health, replace] = REST_ENDPOINTS
  const endpoints = [
    {
      endpoint: create,
      method: /** @type {const} */ ('POST'),
      path: '/api/sessions',
      body,
      maxOverallRequests: MAX_CREATES,
      onResponse: (/** @type {number} */ status, /** @type {string} */ text) => { if (status === 201) created.push(JSON.parse(text).id) }
    },
    { endpoint: get, method: /** @type {const} */ ('GET'), path: `/api/sessions/${id}` },
    { endpoint: list, method: /** @type {const} */ ('GET'), path: '/api/sessions?limit=20' },
    { endpoint: health, method: /** @type {const} */ ('GET'), path: '/api/health' },
    {
      endpoint: replace,
      method: /** @type {const} */ ('PUT'),
      path: `/api/sessions/${content.id}/content`,
      body: JSON.stringify({ text: contentOf(0) }),
      setupRequest: (/** @type {AutocannonRequest} */ request) => ({ ...request, body: JSON.stringify({ text: contentOf(++puts) }) })
    }
  ]
  try {
    /** @type {RestResult[]} */
    const results = []
    for (const { endpoint, method, path, body, maxOverallRequests, onResponse, setupRequest } of endpoints) {
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
      results.push({
        endpoint,
        requests: result.requests.total,
        requestsPerSecond: result.requests.total / result.duration,
        latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
        errors: result.errors,
        non2xx: result.non2xx
      })
    }
    return results
  } finally {
    await mapLimit(created, CLEANUP_CONCURRENCY, session => api.deleteSession(session).catch(() => {}))
  }
}
