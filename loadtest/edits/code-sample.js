// Source text that synthetic editors type, so documents and updates look like code (identifiers,
// punctuation, indentation, newlines) rather than random bytes, which would compress differently.

export const CODE = `import { createServer } from 'node:http'

/**
 * A small in-memory store with expiry, the kind of module people edit together.
 * @template T
 */
export class ExpiringStore {
  /** @type {Map<string, { value: T, expires: number }>} */
  #entries = new Map()

  /** @param {{ ttlMs?: number, now?: () => number }} [options] */
  constructor ({ ttlMs = 60000, now = Date.now } = {}) {
    this.ttlMs = ttlMs
    this.now = now
  }

  /** @param {string} key @param {T} value */
  set (key, value) {
    this.#entries.set(key, { value, expires: this.now() + this.ttlMs })
    return this
  }

  /** @param {string} key @returns {T | undefined} */
  get (key) {
    const entry = this.#entries.get(key)
    if (!entry) return undefined
    if (entry.expires <= this.now()) {
      this.#entries.delete(key)
      return undefined
    }
    return entry.value
  }

  sweep () {
    let removed = 0
    for (const [key, entry] of this.#entries) {
      if (entry.expires <= this.now()) {
        this.#entries.delete(key)
        removed++
      }
    }
    return removed
  }
}

export function listen (store, port = 8080) {
  const server = createServer((req, res) => {
    const key = decodeURIComponent(req.url.slice(1))
    if (req.method === 'PUT') {
      let body = ''
      req.on('data', chunk => { body += chunk })
      req.on('end', () => {
        store.set(key, body)
        res.writeHead(204).end()
      })
      return
    }
    const value = store.get(key)
    if (value === undefined) res.writeHead(404).end('not found\\n')
    else res.writeHead(200, { 'content-type': 'text/plain' }).end(value)
  })
  setInterval(() => store.sweep(), 1000).unref()
  return new Promise(resolve => server.listen(port, () => resolve(server)))
}
`

/**
 * `length` characters of code, starting `offset` characters into the sample and wrapping around.
 * @param {number} offset
 * @param {number} length
 */
export function codeAt (offset, length) {
  let out = ''
  let at = offset % CODE.length
  while (out.length < length) {
    const chunk = CODE.slice(at, at + length - out.length)
    out += chunk
    at = (at + chunk.length) % CODE.length
  }
  return out
}
