import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createSocket } from '../client/src/socket.js'
import { eventually } from './helpers/eventually.js'
import { openDoc } from './helpers/provider.js'
import { api, contentOf, createSession, startServer, tempDataDir } from './helpers/server.js'

const AUTH_SECRET = 'a-test-secret-that-is-at-least-32-characters'
const API_KEY = 'test-api-key-0123456789'
const KEY = { authorization: `Bearer ${API_KEY}` }
// The shortest `ttl` a token may be minted with (server/http/validation.js, TOKEN_TTL_SECONDS' minimum).
const SHORTEST_TTL = 10
const FAST_RETRY = { retryDelayMs: 20, maxRetryDelayMs: 200 }

describe('a provider given a token function, with auth off', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  before(async () => { tandem = await startServer() })
  after(() => tandem.close())

  /** A token function as the README's example is when no backend route serves it. */
  const unreachable = () => {
    const token = async () => {
      token.calls++
      throw new TypeError('Failed to parse URL from /tandem-token/x')
    }
    token.calls = 0
    return token
  }

  it('never calls it, since the server asks for no token, and syncs', async () => {
    const { id } = await createSession(tandem.url)
    const token = unreachable()
    /** @type {Error[]} */
    const connectionErrors = []
    const alice = openDoc(tandem.url, id, { token, connect: false, ...FAST_RETRY })
    alice.provider.on('connection-error', err => connectionErrors.push(err))
    alice.provider.connect()
    alice.append('no token needed')
    await eventually(() => alice.settled())
    assert.equal(await contentOf(tandem.url, id), 'no token needed')
    assert.equal(token.calls, 0)
    assert.deepEqual(connectionErrors, [])
    assert.deepEqual(alice.events.refused, [])
    alice.destroy()
  })

  it('never calls the token function of a shared socket, nor the provider\'s', async () => {
    const { id } = await createSession(tandem.url)
    const [socketToken, providerToken] = [unreachable(), unreachable()]
    const socket = createSocket(tandem.url, { token: socketToken })
    const alice = openDoc(tandem.url, id, { socket, token: providerToken, ...FAST_RETRY })
    alice.append('shared')
    await eventually(() => alice.settled())
    assert.deepEqual([socketToken.calls, providerToken.calls], [0, 0])
    alice.destroy()
    socket.disconnect()
  })
})

describe('a provider given a token function, with auth on', () => {
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let data
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  const overrides = () => ({ dataDir: data.dir, authSecret: AUTH_SECRET, apiKey: API_KEY })

  before(async () => {
    data = await tempDataDir()
    tandem = await startServer(overrides())
  })
  after(async () => {
    await tandem.close()
    await data.remove()
  })

  const newSession = async () => (await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'long.md' }, headers: KEY })).body.id
  /** What a backend does for its page: mint a short-lived token through the REST API. @param {string} id */
  const mint = async (id) => {
    const res = await api(tandem.url, `/api/sessions/${id}/tokens`, { method: 'POST', body: { user: 'alice', role: 'editor', ttl: SHORTEST_TTL }, headers: KEY })
    assert.equal(res.status, 201)
    return /** @type {string} */ (res.body.token)
  }

  it('asks for a token once the server refuses a handshake without one, and joins without reporting that refusal', async () => {
    const id = await newSession()
    let calls = 0
    /** @type {Error[]} */
    const connectionErrors = []
    const alice = openDoc(tandem.url, id, { token: () => { calls++; return mint(id) }, connect: false, ...FAST_RETRY })
    alice.provider.on('connection-error', err => connectionErrors.push(err))
    alice.provider.connect()
    alice.append('joined with a token')
    await eventually(() => alice.settled())
    assert.equal(calls, 2, 'once for the handshake that follows the refused one, once for the join')
    assert.deepEqual(alice.events.refused, [])
    assert.deepEqual(connectionErrors, [])
    assert.deepEqual(alice.events.status, ['connecting', 'connected'])
    alice.destroy()
  })

  it('on a socket whose handshake token opens another session, asks for its own token when the join is refused', async () => {
    const [other, id] = [await newSession(), await newSession()]
    const socket = createSocket(tandem.url, { token: await mint(other) })
    let calls = 0
    const alice = openDoc(tandem.url, id, { socket, token: () => { calls++; return mint(id) }, ...FAST_RETRY })
    alice.append('in the second session')
    await eventually(() => alice.settled())
    assert.equal(calls, 1)
    assert.deepEqual(alice.events.refused, [], 'the FORBIDDEN join only asked for the token')
    assert.equal((await api(tandem.url, `/api/sessions/${id}/content`, { headers: KEY })).body, 'in the second session')
    alice.destroy()
    socket.disconnect()
  })

  it('outlives its token: after the token expires and the server restarts, it fetches a fresh one and loses no edit', async () => {
    const id = await newSession()
    const stale = await mint(id)
    let calls = 0
    // The first three answers are the token minted above, as a backend that caches tokens would
    // give: the third is asked for after the restart, when that token has expired.
    const token = async () => ++calls <= 3 ? stale : mint(id)
    /** @type {Error[]} */
    const connectionErrors = []
    const alice = openDoc(tandem.url, id, { token, ...FAST_RETRY })
    alice.provider.on('connection-error', err => connectionErrors.push(err))
    await eventually(() => alice.settled())
    assert.equal(calls, 2, 'asked once for the handshake and once for the join')
    alice.append('before expiry\n')
    await eventually(() => alice.settled())

    // Wait for the server itself to refuse the token, not for a guessed time.
    await eventually(async () => (await api(tandem.url, `/api/sessions/${id}`, { headers: { authorization: `Bearer ${stale}` } })).status === 401,
      { timeoutMs: (SHORTEST_TTL + 5) * 1000, intervalMs: 250, what: 'the first token expired' })
    alice.append('after expiry, before the restart\n')
    await eventually(() => alice.settled())

    const { port } = new URL(tandem.url)
    await tandem.server.close()
    await eventually(() => alice.provider.status === 'connecting')
    alice.append('typed while the server was down\n')
    assert.ok(alice.provider.unsyncedChanges > 0)
    tandem = await startServer({ ...overrides(), port: Number(port) })

    await eventually(() => alice.settled(), { timeoutMs: 15000, what: 'the provider back and its edits stored' })
    const expected = 'before expiry\nafter expiry, before the restart\ntyped while the server was down\n'
    assert.equal(alice.text(), expected)
    assert.equal((await api(tandem.url, `/api/sessions/${id}/content`, { headers: KEY })).body, expected)
    // The server closed the membership when its token expired; the provider joined again, and the
    // cached, expired token it was given first was refused, then replaced by a fresh one.
    assert.ok(alice.events.closed.includes('expired'), 'the membership ended with its token')
    const refusal = alice.events.refused.find(({ code }) => code === 'UNAUTHORIZED')
    assert.ok(refusal, 'the expired token was refused')
    assert.equal(refusal.retry, true, 'and retried with a fresh token')
    assert.ok(calls >= 5, `asked again after the refusal, and after the restart (${calls} calls)`)
    alice.destroy()
  })

  it('retries with backoff when the token function fails, and reports why', async () => {
    const id = await newSession()
    let calls = 0
    const token = async () => {
      if (++calls === 1) throw new Error('backend unreachable')
      return mint(id)
    }
    /** @type {Error[]} */
    const connectionErrors = []
    const alice = openDoc(tandem.url, id, { token, connect: false, ...FAST_RETRY })
    alice.provider.on('connection-error', err => connectionErrors.push(err))
    alice.provider.connect()
    alice.append('kept meanwhile')
    await eventually(() => alice.settled())
    assert.ok(connectionErrors.some(err => err.message === 'the server requires a join token, and the token function failed: backend unreachable'),
      connectionErrors.map(err => err.message).join('\n'))
    assert.equal((await api(tandem.url, `/api/sessions/${id}/content`, { headers: KEY })).body, 'kept meanwhile')
    alice.destroy()
  })

  it('stops at the first refusal with a token string, which cannot be renewed', async () => {
    const id = await newSession()
    const alice = openDoc(tandem.url, id, { token: 'not-a-token', ...FAST_RETRY })
    await eventually(() => alice.events.refused.some(({ event, code, retry }) => event === 'connect' && code === 'UNAUTHORIZED' && !retry))
    assert.equal(alice.provider.status, 'disconnected')
    alice.destroy()
  })
})
