// The REST calls the load test makes to the server under test, each bounded by a timeout and carrying
// the API key, when one is given, as `Authorization: Bearer`.

const REQUEST_TIMEOUT_MS = 30000

/** No HTTP answer at all: nothing listens there, the name does not resolve, or the timeout passed. */
export class UnreachableError extends Error {
  /** @param {string} url @param {any} err what fetch threw */
  constructor (url, err) {
    const reason = err?.name === 'TimeoutError' ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : err?.cause?.code ?? err?.cause?.message ?? err?.message
    super(`no server answered at ${url} (${reason})`, { cause: err })
    this.url = url
  }
}

export class TandemApi {
  /** @param {string} url @param {string | null} apiKey @param {string | null} [metricsToken] */
  constructor (url, apiKey, metricsToken = null) {
    this.url = url
    /** @type {Record<string, string>} */
    this.headers = apiKey ? { authorization: `Bearer ${apiKey}` } : {}
    /** @type {Record<string, string>} /metrics takes its own token (METRICS_TOKEN), not the API key */
    this.metricsHeaders = metricsToken ? { authorization: `Bearer ${metricsToken}` } : {}
  }

  /**
   * @param {string} method
   * @param {string} path
   * @param {unknown} [body]
   * @param {Record<string, string>} [headers]
   */
  async request (method, path, body, headers = this.headers) {
    const res = await fetch(this.url + path, {
      method,
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
    }).catch((err) => { throw new UnreachableError(this.url, err) })
    const text = await res.text()
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 200)}`)
    return { res, text }
  }

  /**
   * @param {{ name: string, content?: string, maxEditors?: number }} fields
   * @returns {Promise<{ id: string }>}
   */
  async createSession (fields) {
    return JSON.parse((await this.request('POST', '/api/sessions', fields)).text)
  }

  /**
   * A join token for `id` (a server with auth on needs one per session).
   * @param {string} id
   * @param {{ user: string, role: 'editor' | 'viewer', ttl?: number }} fields
   * @returns {Promise<{ token: string }>}
   */
  async mintToken (id, fields) {
    return JSON.parse((await this.request('POST', `/api/sessions/${id}/tokens`, fields)).text)
  }

  /** @param {string} id */
  async deleteSession (id) {
    await this.request('DELETE', `/api/sessions/${id}`)
  }

  /** The document's text as the server holds it. @param {string} id */
  async content (id) {
    return (await this.request('GET', `/api/sessions/${id}/content`)).text
  }

  /** @returns {Promise<any>} */
  async health () {
    return JSON.parse((await this.request('GET', '/api/health')).text)
  }

  /**
   * The server's metrics as prom-client's JSON (`Accept: application/json`), or null when it exposes
   * none, or only as text (a build older than the JSON form).
   * @returns {Promise<import('./prometheus.js').MetricJson[] | null>}
   */
  async metrics () {
    try {
      const { text } = await this.request('GET', '/metrics', undefined, { ...this.metricsHeaders, accept: 'application/json' })
      const metrics = JSON.parse(text)
      return Array.isArray(metrics) ? metrics : null
    } catch {
      return null
    }
  }
}

/**
 * Runs `task` over `items`, at most `limit` at a time.
 * @template T, R
 * @param {T[]} items
 * @param {number} limit
 * @param {(item: T, index: number) => Promise<R>} task
 * @returns {Promise<R[]>}
 */
export async function mapLimit (items, limit, task) {
  /** @type {R[]} */
  const results = new Array(items.length)
  let next = 0
  const lane = async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await task(items[i], i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane))
  return results
}
