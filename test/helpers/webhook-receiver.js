import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import http from 'node:http'

/** The receiver's check of docs/API.md ("Webhooks"), run as written. */
async function documentedVerification () {
  const api = await readFile(new URL('../../docs/API.md', import.meta.url), 'utf8')
  const section = api.slice(api.indexOf('\n## Webhooks\n'))
  const code = /```js\n([\s\S]*?)```/.exec(section)?.[1]
  if (!code) throw new Error('docs/API.md has no receiver example under "Webhooks"')
  /** @type {{ verified: (secret: string, header: string, body: string) => boolean }} */
  const module = await import(`data:text/javascript,${encodeURIComponent(code)}`)
  return module.verified
}

/** @typedef {number | 'hang'} Answer a status, or no answer at all until the receiver closes */

/**
 * @typedef {object} ReceivedRequest
 * @property {string} raw the body as sent
 * @property {any} body parsed
 * @property {import('node:http').IncomingHttpHeaders} headers
 * @property {boolean} verified whether the documented check accepts its signature
 * @property {Answer} answer what it was answered
 */

/**
 * A webhook receiver on loopback, a real HTTP server: it checks each request's signature the way
 * docs/API.md shows, and answers the nth request (from 1) with `answer(n)`.
 * @param {{ secret: string, answer?: (n: number) => Answer }} options
 */
export async function startReceiver ({ secret, answer = () => 200 }) {
  const verified = await documentedVerification()
  /** @type {ReceivedRequest[]} */
  const requests = []
  /** @type {Set<import('node:http').ServerResponse>} */
  const hanging = new Set()
  const state = { answer }
  const server = http.createServer((req, res) => {
    /** @type {Buffer[]} */
    const chunks = []
    req.on('data', chunk => chunks.push(chunk))
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8')
      const reply = state.answer(requests.length + 1)
      requests.push({ raw, body: JSON.parse(raw), headers: req.headers, verified: verified(secret, String(req.headers['tandem-signature']), raw), answer: reply })
      if (reply === 'hang') hanging.add(res)
      else res.writeHead(reply).end()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
  return {
    url: `http://127.0.0.1:${port}/hooks?key=receiver-token`,
    requests,
    /** @param {(n: number) => Answer} next */
    answerWith (next) { state.answer = next },
    /** Events answered 2xx, by id: each delivered one, once however often it arrived. */
    delivered () {
      /** @type {Map<string, any>} */
      const events = new Map()
      for (const { body, answer } of requests) if (typeof answer === 'number' && answer < 300) events.set(body.id, body)
      return events
    },
    /** @param {string} type */
    deliveredOfType (type) {
      return [...this.delivered().values()].filter(event => event.type === type)
    },
    async close () {
      for (const res of hanging) res.destroy()
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    }
  }
}
