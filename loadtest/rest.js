import { createRequire } from 'node:module'
import { mapLimit } from './api.js'

/**
 * @typedef {{ p50: number, p90: number, p99: number, max: number, total: number }} Percentiles
 * @typedef {{ method: string, path: string, headers: Record<string, string>, body?: string, onResponse?: (status: number, body: string) => void }} AutocannonRequest
 * @typedef {{ url: string, connections: number, duration: number, maxOverallRequests?: number, requests: AutocannonRequest[] }} AutocannonOptions
 * @typedef {{ requests: Percentiles, latency: Percentiles, duration: number, errors: number, non2xx: number }} AutocannonResult
 */

// autocannon ships no types, and tsc (checkJs through jsconfig.json) would type-check its sources if
// it were imported; loading it through require keeps it opaque, typed by the part of its API used here.
/** @type {(options: AutocannonOptions) => Promise<AutocannonResult>} */
const autocannon = createRequire(import.meta.url)('autocannon')

// The REST section: autocannon against the session API, one endpoint at a time so each figure is
// that endpoint alone. Creating is bounded by count as well as time, and what it created is deleted.

const CONNECTIONS = 10
/** The endpoints measured, one after another, each for the section's duration. */
export const REST_ENDPOINTS = Object.freeze(['POST /api/sessions', 'GET /api/sessions/:id', 'GET /api/sessions', 'GET /api/health'])
const MAX_CREATES = 2000
const CLEANUP_CONCURRENCY = 8

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
  const [create, get, list, health] = REST_ENDPOINTS
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
    { endpoint: health, method: /** @type {const} */ ('GET'), path: '/api/health' }
  ]
  try {
    /** @type {RestResult[]} */
    const results = []
    for (const { endpoint, method, path, body, maxOverallRequests, onResponse } of endpoints) {
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
          ...(onResponse ? { onResponse } : {})
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
