import http from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { atEnd } from './at-end.js'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer } from '../../server/app.js'
import { loadConfig } from '../../server/config.js'

/** @type {Set<() => Promise<void>>} closes of servers still running */
const running = new Set()
// A test that fails before closing its server would leave it listening, and the file would never
// finish (npm test does not force an exit): whatever still runs is closed at its end.
atEnd(async () => { for (const close of running) await close() })

/** A fresh data directory, removed by the returned cleanup. */
export async function tempDataDir () {
  const dir = await mkdtemp(join(tmpdir(), 'tandem-test-'))
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) }
}

/**
 * Starts a real server in this process on an ephemeral loopback port, on a fresh data directory
 * (removed on close) unless `dataDir` is given.
 * @param {Partial<import('../../server/config.js').Config>} [overrides]
 * @param {Parameters<typeof createServer>[1]} [deps] e.g. `{ now: clock.now }` from `manualClock()`
 */
export async function startServer (overrides = {}, deps = {}) {
  const data = overrides.dataDir ? null : await tempDataDir()
  const config = loadConfig({}, { port: 0, host: '127.0.0.1', logLevel: 'silent', dataDir: data?.dir, ...overrides })
  const server = await createServer(config, deps)
  const { url } = await server.listen()
  const close = async () => {
    running.delete(close)
    await server.close()
    await data?.remove()
  }
  running.add(close)
  return { server, url, config, close }
}

/**
 * Calls the REST API and returns status, headers and the parsed body.
 * @param {string} url
 * @param {string} path
 * @param {{ method?: string, body?: unknown, raw?: string, headers?: Record<string, string> }} [options]
 */
export async function api (url, path, { method = 'GET', body, raw, headers = {} } = {}) {
  const hasBody = body !== undefined || raw !== undefined
  const res = await fetch(url + path, {
    method,
    headers: hasBody ? { 'content-type': 'application/json', ...headers } : headers,
    body: raw ?? (body === undefined ? undefined : JSON.stringify(body))
  })
  const type = res.headers.get('content-type') ?? ''
  const data = type.includes('json')
    ? await res.json()
    : type.includes('octet-stream') ? new Uint8Array(await res.arrayBuffer()) : await res.text()
  return { status: res.status, headers: res.headers, body: data }
}

/**
 * @param {string} url
 * @param {{ name?: string, language?: string, maxEditors?: number, content?: string, webhookUrl?: string }} [fields]
 */
export async function createSession (url, fields = {}) {
  const res = await api(url, '/api/sessions', { method: 'POST', body: { name: 'test', ...fields } })
  if (res.status !== 201) throw new Error(`session not created: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** @param {string} url @param {string} id */
export async function contentOf (url, id) {
  const res = await api(url, `/api/sessions/${id}/content`)
  if (res.status !== 200) throw new Error(`content: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/**
 * A clock that stands still until moved: given to a server as `now`, its rate limits refill only
 * when the test says, so how many of a burst pass does not depend on how fast the machine is.
 */
export function manualClock () {
  let ms = 0
  return {
    now: () => ms,
    /** @param {number} by milliseconds */
    advance (by) { ms += by }
  }
}

/**
 * One HTTP request with headers fetch would not send as given (`Host`).
 * @param {string} url @param {string} method @param {string} path
 * @param {Record<string, string>} headers @param {string} [body]
 * @returns {Promise<{ status: number | undefined, body: string }>}
 */
export function rawRequest (url, method, path, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request(new URL(path, url), { method, headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', chunk => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode, body: text }))
    })
    req.on('error', reject)
    req.end(body)
  })
}
