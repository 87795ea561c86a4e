import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { Writable } from 'node:stream'
import { SignJWT } from 'jose'
import pino from 'pino'
import { createServer } from '../server/app.js'
import { TokenIssuer } from '../server/auth/tokens.js'
import { ConfigError, loadConfig } from '../server/config.js'
import { EVENTS } from '../isomorphic/events.js'
import { TestEditor, awarenessUpdate } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { api, contentOf, manualClock, startServer, tempDataDir } from './helpers/server.js'

const AUTH_SECRET = 'a-test-secret-that-is-at-least-32-characters'
const API_KEY = 'test-api-key-0123456789'
const KEY = { authorization: `Bearer ${API_KEY}` }

describe('start-up', () => {
  it('refuses to start in production without AUTH_SECRET and API_KEY', () => {
    assert.throws(() => loadConfig({ NODE_ENV: 'production' }), ConfigError)
    assert.throws(() => loadConfig({ NODE_ENV: 'production', AUTH_SECRET }), /API_KEY/)
    assert.doesNotThrow(() => loadConfig({ NODE_ENV: 'production', AUTH_SECRET, API_KEY, METRICS_PUBLIC: 'true' }))
  })

  it('refuses a short secret without echoing it', () => {
    assert.throws(() => loadConfig({ AUTH_SECRET: 'short-secret', API_KEY }), (/** @type {Error} */ err) => {
      assert.match(err.message, /AUTH_SECRET=\(hidden\) is invalid: must be at least 32 characters/)
      assert.doesNotMatch(err.message, /short-secret/)
      return true
    })
  })

  it('runs with auth off in development, and says so at start-up and in /api/health', async () => {
    /** @type {string[]} */
    const logLines = []
    const data = await tempDataDir()
    const config = loadConfig({}, { port: 0, host: '127.0.0.1', dataDir: data.dir })
    const logger = pino({ level: 'info' }, new Writable({ write (chunk, encoding, done) { logLines.push(String(chunk)); done() } }))
    const server = await createServer(config, { logger })
    const { url } = await server.listen()
    assert.ok(logLines.some(line => JSON.parse(line).level === 40 && /AUTH IS OFF/.test(line)), 'a warning at start-up')
    const health = await api(url, '/api/health')
    assert.equal(health.body.auth, 'off')
    const editor = new TestEditor(url)
    await editor.connected()
    editor.close()
    await server.close()
    await data.remove()
  })

  it('with API_KEY alone, opens management and session reads to that key only; LIST_NEEDS_API_KEY=false opens listing', async () => {
    const tandem = await startServer({ apiKey: API_KEY, listNeedsApiKey: false })
    const { body: { id } } = await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'x' }, headers: KEY })
    assert.equal((await api(tandem.url, `/api/sessions/${id}`, { headers: KEY })).status, 200)
    const guessed = await api(tandem.url, `/api/sessions/${id}`, { headers: { authorization: 'Bearer anything-at-all' } })
    assert.equal(guessed.status, 401, 'no join tokens exist with auth off, so a bearer that is not the key is refused')
    assert.equal((await api(tandem.url, `/api/sessions/${id}/content`)).status, 401)
    assert.equal((await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'y' } })).status, 401)
    assert.equal((await api(tandem.url, '/api/sessions')).status, 200, 'listing is open')
    await tandem.close()
  })
})

describe('with AUTH_SECRET and API_KEY set', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {string[]} */
  const logLines = []
  /** @type {TestEditor[]} */
  const editors = []

  before(async () => {
    const data = await tempDataDir()
    const config = loadConfig({}, { port: 0, host: '127.0.0.1', logLevel: 'info', dataDir: data.dir, authSecret: AUTH_SECRET, apiKey: API_KEY })
    const logger = pino({ level: 'info' }, new Writable({ write (chunk, encoding, done) { logLines.push(String(chunk)); done() } }))
    const server = await createServer(config, { logger })
    const { url } = await server.listen()
    tandem = { server, url, config, close: async () => { await server.close(); await data.remove() } }
  })
  after(async () => {
    for (const editor of editors) editor.close()
    await tandem.close()
  })

  /** @param {string} [token] @param {Record<string, unknown>} [options] */
  const editorWith = (token, options = {}) => {
    const editor = new TestEditor(tandem.url, { ...(token === undefined ? {} : { auth: { token } }), ...options })
    editors.push(editor)
    return editor
  }
  const newSession = async () => (await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'secure' }, headers: KEY })).body.id
  /**
   * A join token as minted before revocation generations: `iat_ms`, no `gen`.
   * @param {string} session @param {string} user @param {number} issuedAtMs
   */
  const legacyToken = (session, user, issuedAtMs) =>
    new SignJWT({ sid: session, role: 'editor', iat_ms: issuedAtMs })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer('tandem')
      .setSubject(user)
      .setJti(randomUUID())
      .setIssuedAt(Math.floor(issuedAtMs / 1000))
      .setExpirationTime('10m')
      .sign(new TextEncoder().encode(AUTH_SECRET))
  /** @param {string} session @param {object} body */
  const mint = async (session, body) => {
    const res = await api(tandem.url, `/api/sessions/${session}/tokens`, { method: 'POST', body, headers: KEY })
    assert.equal(res.status, 201, JSON.stringify(res.body))
    return res.body
  }

  it('says auth is on in /api/health', async () => {
    assert.equal((await api(tandem.url, '/api/health')).body.auth, 'on')
  })

  it('refuses management calls without the API key, or with a wrong one', async () => {
    const missing = await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'x' } })
    assert.equal(missing.status, 401)
    assert.equal(missing.body.error.code, 'UNAUTHORIZED')
    const wrong = await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'x' }, headers: { authorization: 'Bearer not-the-key' } })
    assert.equal(wrong.status, 401)
    assert.equal((await api(tandem.url, '/api/sessions')).status, 401, 'listing needs the key by default')
    assert.equal((await api(tandem.url, '/api/sessions', { headers: KEY })).status, 200)
    const id = await newSession()
    assert.equal((await api(tandem.url, `/api/sessions/${id}`, { method: 'PATCH', body: { name: 'y' } })).status, 401)
    assert.equal((await api(tandem.url, `/api/sessions/${id}`, { method: 'DELETE' })).status, 401)
    assert.equal((await api(tandem.url, `/api/sessions/${id}/tokens`, { method: 'POST', body: { user: 'a', role: 'editor' } })).status, 401)
  })

  it('mints tokens naming session, user and role, and validates the request', async () => {
    const id = await newSession()
    const before = Date.now()
    const minted = await mint(id, { user: 'alice', role: 'editor', ttl: 600 })
    assert.equal(typeof minted.token, 'string')
    assert.equal(typeof minted.tokenId, 'string')
    assert.ok(Math.abs(Date.parse(minted.expiresAt) - (before + 600_000)) < 2000)
    assert.equal(minted.user, 'alice')
    assert.equal(minted.role, 'editor')
    for (const body of [{ user: 'a', role: 'admin' }, { user: '', role: 'editor' }, { user: 'a', role: 'editor', ttl: 10 ** 9 }, { user: 'a', role: 'editor', extra: 1 }]) {
      const res = await api(tandem.url, `/api/sessions/${id}/tokens`, { method: 'POST', body, headers: KEY })
      assert.equal(res.status, 400, JSON.stringify(body))
    }
    const unknown = await api(tandem.url, '/api/sessions/nosuchsession/tokens', { method: 'POST', body: { user: 'a', role: 'editor' }, headers: KEY })
    assert.equal(unknown.status, 404)
  })

  it('refuses connections with a missing, forged or expired token', async () => {
    const id = await newSession()
    const noToken = await editorWith().connectError()
    assert.equal(noToken.data.code, 'UNAUTHORIZED')
    const forged = await new TokenIssuer('another-secret-that-is-at-least-32-chars').issue({ session: id, user: 'eve', role: 'editor', generation: 0, ttlSeconds: 600 })
    const forgedError = await editorWith(forged.token).connectError()
    assert.equal(forgedError.data.code, 'UNAUTHORIZED')
    assert.match(forgedError.data.message, /invalid/)
    const expired = await new TokenIssuer(AUTH_SECRET).issue({ session: id, user: 'bob', role: 'editor', generation: 0, ttlSeconds: -60 })
    const expiredError = await editorWith(expired.token).connectError()
    assert.equal(expiredError.data.code, 'UNAUTHORIZED')
    assert.match(expiredError.data.message, /expired/)
    const garbage = await editorWith('not.a.jwt').connectError()
    assert.equal(garbage.data.code, 'UNAUTHORIZED')
    // An unsigned token (alg "none") with well-formed claims.
    const part = (/** @type {object} */ value) => Buffer.from(JSON.stringify(value)).toString('base64url')
    const unsigned = `${part({ alg: 'none', typ: 'JWT' })}.${part({ iss: 'tandem', sub: 'eve', sid: id, role: 'editor', jti: 'x', iat_ms: Date.now(), exp: Math.floor(Date.now() / 1000) + 600 })}.`
    assert.equal((await editorWith(unsigned).connectError()).data.code, 'UNAUTHORIZED')
  })

  it('lets a token join only its own session', async () => {
    const [mine, other] = [await newSession(), await newSession()]
    const { token } = await mint(mine, { user: 'alice', role: 'editor' })
    const alice = editorWith(token)
    const refused = await alice.join(other)
    assert.equal(refused.error.code, 'FORBIDDEN')
    assert.match(refused.error.message, new RegExp(`token is for session ${mine}`))
    const joined = await alice.join(mine)
    assert.equal(joined.ok, true)
    assert.equal(joined.role, 'editor')
    // A connection shared by several sessions passes each join its own token.
    const otherToken = (await mint(other, { user: 'alice', role: 'viewer' })).token
    const second = await alice.socket.timeout(5000).emitWithAck(EVENTS.JOIN, { doc: other, token: otherToken })
    assert.equal(second.ok, true)
    assert.equal(second.role, 'viewer')
  })

  it('lets a viewer read and show a cursor, and refuses its every update', async () => {
    const id = await newSession()
    const alice = editorWith((await mint(id, { user: 'alice', role: 'editor' })).token)
    const victor = editorWith((await mint(id, { user: 'victor', role: 'viewer' })).token)
    await alice.join(id)
    assert.deepEqual(await alice.insert(id, 0, 'shared'), { ok: true })
    const joined = await victor.join(id)
    assert.equal(joined.role, 'viewer')
    assert.equal(victor.text(id), 'shared')

    const refused = await victor.insert(id, 0, 'vandal ')
    assert.equal(refused.error.code, 'FORBIDDEN')
    assert.deepEqual(await alice.insert(id, 6, '!'), { ok: true })
    await eventually(() => victor.received.some(r => r.event === EVENTS.UPDATE), { timeoutMs: 2000 })

    victor.socket.emit(EVENTS.AWARENESS, { doc: id, update: awarenessUpdate(77, 1, { user: { name: 'victor' } }) })
    await eventually(() => alice.received.some(r => r.event === EVENTS.AWARENESS))
    assert.equal(await contentOf(tandem.url, id).catch(() => null), null, 'content needs credentials')
    const content = await api(tandem.url, `/api/sessions/${id}/content`, { headers: KEY })
    assert.equal(content.body, 'shared!')
    assert.equal(alice.received.filter(r => r.event === EVENTS.UPDATE).length, 0, 'the viewer\'s edit reached nobody')
  })

  it('reads a session with the API key or a token for it, not with one for another', async () => {
    const [id, other] = [await newSession(), await newSession()]
    const { token } = await mint(id, { user: 'alice', role: 'viewer' })
    assert.equal((await api(tandem.url, `/api/sessions/${id}`, { headers: { authorization: `Bearer ${token}` } })).status, 200)
    assert.equal((await api(tandem.url, `/api/sessions/${id}/content`, { headers: { authorization: `Bearer ${token}` } })).status, 200)
    const wrong = await api(tandem.url, `/api/sessions/${other}`, { headers: { authorization: `Bearer ${token}` } })
    assert.equal(wrong.status, 403)
    assert.equal((await api(tandem.url, `/api/sessions/${id}`)).status, 401)
  })

  it('revokes one token: its sockets lose the document at once and cannot rejoin', async () => {
    const id = await newSession()
    const aliceToken = await mint(id, { user: 'alice', role: 'editor' })
    const alice = editorWith(aliceToken.token)
    const bob = editorWith((await mint(id, { user: 'bob', role: 'editor' })).token)
    await alice.join(id)
    await bob.join(id)

    const revoked = await api(tandem.url, `/api/sessions/${id}/tokens/${aliceToken.tokenId}`, { method: 'DELETE', headers: KEY })
    assert.equal(revoked.status, 204)
    await eventually(() => alice.received.some(r => r.event === EVENTS.CLOSED))
    assert.deepEqual(alice.received.find(r => r.event === EVENTS.CLOSED)?.payload, { doc: id, reason: 'revoked' })
    assert.equal((await alice.insert(id, 0, 'late')).error.code, 'NOT_JOINED')
    const again = await alice.socket.timeout(5000).emitWithAck(EVENTS.JOIN, { doc: id })
    assert.equal(again.error.code, 'UNAUTHORIZED')
    assert.match(again.error.message, /revoked/)
    assert.deepEqual(await bob.insert(id, 0, 'still here'), { ok: true }, 'other users keep editing')
    assert.equal(bob.received.filter(r => r.event === EVENTS.CLOSED).length, 0)
  })

  it('revokes every token of a user, and a token minted afterwards works', async () => {
    const id = await newSession()
    const first = editorWith((await mint(id, { user: 'carol', role: 'editor' })).token)
    const second = editorWith((await mint(id, { user: 'carol', role: 'editor' })).token)
    await first.join(id)
    await second.join(id)
    const res = await api(tandem.url, `/api/sessions/${id}/tokens?user=carol`, { method: 'DELETE', headers: KEY })
    assert.equal(res.status, 204)
    await eventually(() => [first, second].every(e => e.received.some(r => r.event === EVENTS.CLOSED)))
    const fresh = editorWith((await mint(id, { user: 'carol', role: 'editor' })).token)
    assert.equal((await fresh.join(id)).ok, true)
  })

  for (const [step, stepMs] of /** @type {const} */ ([['an hour', 3_600_000], ['two seconds', 2000]])) {
    it(`refuses the token of a revoked user after the wall clock steps back ${step}, and admits one minted afterwards`, async (t) => {
      const id = await newSession()
      const { token } = await mint(id, { user: 'dan', role: 'editor' })
      t.mock.timers.enable({ apis: ['Date'], now: Date.now() - stepMs })
      assert.equal((await api(tandem.url, `/api/sessions/${id}/tokens?user=dan`, { method: 'DELETE', headers: KEY })).status, 204)
      const refused = await editorWith(token).joinOutcome(id)
      assert.equal(refused.code, 'UNAUTHORIZED', 'the revoked token is refused')
      assert.match(refused.message, /revoked/)
      const fresh = await mint(id, { user: 'dan', role: 'editor' })
      const dan = editorWith(fresh.token)
      assert.equal((await dan.joinOutcome(id)).code, 'joined', 'a token minted after the revocation, on the stepped clock, works')
      assert.deepEqual(await dan.insert(id, 0, 'mine'), { ok: true })
      assert.equal((await api(tandem.url, `/api/sessions/${id}/content`, { headers: KEY })).body, 'mine')
    })
  }

  it('admits a token minted before generations until its user is revoked, and orders it by time against a revocation recorded then', async () => {
    const id = await newSession()
    const now = Date.now()
    assert.equal((await editorWith(await legacyToken(id, 'erin', now)).joinOutcome(id)).code, 'joined')
    assert.equal((await api(tandem.url, `/api/sessions/${id}/tokens?user=erin`, { method: 'DELETE', headers: KEY })).status, 204)
    assert.equal((await editorWith(await legacyToken(id, 'erin', now)).joinOutcome(id)).code, 'UNAUTHORIZED', 'revoked since, by generation')

    // A revocation of frank recorded before generations: the time it was made, in ms.
    const store = /** @type {import('../server/storage/level-session-store.js').LevelSessionStore} */ (tandem.server.backend.sessionStore)
    await store.revoked.put(`${id}!user:frank`, now)
    assert.equal((await editorWith(await legacyToken(id, 'frank', now - 1)).joinOutcome(id)).code, 'UNAUTHORIZED')
    assert.equal((await editorWith(await legacyToken(id, 'frank', now + 1)).joinOutcome(id)).code, 'joined')
    const current = await mint(id, { user: 'frank', role: 'editor' })
    assert.equal((await editorWith(current.token).joinOutcome(id)).code, 'joined', 'a time record says nothing about tokens with a generation')
  })

  it('loses no revocation of a user when several are recorded at once', async () => {
    const id = await newSession()
    const store = tandem.server.backend.sessionStore
    const generations = await Promise.all(Array.from({ length: 8 }, () => store.increment(id, 'gen:gus')))
    assert.deepEqual(generations.sort((x, y) => x - y), [1, 2, 3, 4, 5, 6, 7, 8])
    assert.deepEqual(await store.revocations(id, ['gen:gus']), [8])
  })

  it('writes one audit line per address and kind of refusal every 10 s, however many it refuses, then says how many it left out', async (t) => {
    /** @type {string[]} */
    const lines = []
    const logger = pino({ level: 'info' }, new Writable({ write (chunk, encoding, done) { lines.push(String(chunk)); done() } }))
    const clock = manualClock()
    const flooded = await startServer({ apiKey: API_KEY, metricsToken: 'a-metrics-token-0123456789' }, { logger, now: clock.now })
    t.after(() => flooded.close())
    const refusals = (/** @type {string} */ action) => lines.map(line => JSON.parse(line)).filter(line => line.audit && line.action === action)
    const wrongKey = () => api(flooded.url, '/api/sessions', { method: 'POST', body: { name: 'x' }, headers: { authorization: 'Bearer not-the-key' } })
    for (let i = 0; i < 30; i++) {
      assert.equal((await wrongKey()).status, 401)
      assert.equal((await api(flooded.url, '/metrics', { headers: { authorization: 'Bearer not-the-token' } })).status, 401)
    }
    assert.equal(refusals('http.auth').length, 1, '30 refused requests, one line')
    assert.equal(refusals('http.metrics').length, 1)
    clock.advance(10_000)
    assert.equal((await wrongKey()).status, 401)
    const [first, second, third] = refusals('http.auth')
    assert.equal(first.unlogged, undefined)
    assert.equal(second.unlogged, 29, 'a line counts those left out')
    assert.equal(second.ip, first.ip)
    assert.equal(third.unlogged, undefined, 'and the refusal after them has its own')
  })

  it('writes audit lines for refusals and management actions, never a token or the key', async () => {
    const id = await newSession()
    const { token } = await mint(id, { user: 'dave', role: 'viewer' })
    const dave = editorWith(token)
    await dave.join(id)
    await dave.insert(id, 0, 'x')
    await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'x' }, headers: { authorization: 'Bearer wrong-key' } })
    await eventually(() => logLines.some(line => line.includes('"action":"doc:update"') && line.includes('"dave"')))
    const audit = logLines.map(line => JSON.parse(line)).filter(line => line.audit)
    const actions = audit.map(line => line.action)
    for (const action of ['session.create', 'token.create', 'http.auth', 'doc:update']) assert.ok(actions.includes(action), action)
    const forbidden = audit.find(line => line.action === 'doc:update' && line.users.includes('dave'))
    assert.equal(forbidden.code, 'FORBIDDEN')
    assert.deepEqual(forbidden.users, ['dave'])
    assert.ok(typeof forbidden.time === 'number' && forbidden.ip)
    const everything = logLines.join('\n')
    assert.ok(!everything.includes(token), 'no token in the log')
    assert.ok(!everything.includes(API_KEY), 'no API key in the log')
    assert.ok(!everything.includes(AUTH_SECRET), 'no secret in the log')
  })
})

describe('CORS_ORIGIN', () => {
  it('refuses REST CORS and Socket.IO handshakes from browsers on other origins', async () => {
    const tandem = await startServer({ corsOrigin: 'https://editor.example' })
    const allowed = await api(tandem.url, '/api/health', { headers: { origin: 'https://editor.example' } })
    assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://editor.example')
    const other = await api(tandem.url, '/api/health', { headers: { origin: 'https://evil.example' } })
    assert.equal(other.headers.get('access-control-allow-origin'), null)
    for (const header of ['x-content-type-options', 'strict-transport-security', 'x-frame-options']) {
      assert.ok(other.headers.get(header), `helmet sets ${header}`)
    }

    const evil = new TestEditor(tandem.url, { extraHeaders: { origin: 'https://evil.example' } })
    const outcome = await new Promise(resolve => {
      evil.socket.once('connect', () => resolve('connected'))
      evil.socket.once('connect_error', () => resolve('refused'))
    })
    assert.equal(outcome, 'refused')
    const good = new TestEditor(tandem.url, { extraHeaders: { origin: 'https://editor.example' } })
    await good.connected()
    for (const e of [evil, good]) e.close()
    await tandem.close()
  })

  it('tells a page on another origin, and the log, that CORS_ORIGIN admits it; one line per address per 10 s', async (t) => {
    /** @type {any[]} */
    const lines = []
    const logger = pino({ level: 'info' }, { write (/** @type {string} */ line) { lines.push(JSON.parse(line)) } })
    const tandem = await startServer({ corsOrigin: 'https://editor.example' }, { logger })
    t.after(() => tandem.close())
    const refusals = () => lines.filter(line => line.audit && line.action === 'socket.connect')

    for (let attempt = 0; attempt < 2; attempt++) {
      const page = new TestEditor(tandem.url, { extraHeaders: { origin: 'http://localhost:5173' } })
      t.after(() => page.close())
      const err = /** @type {Error & { data?: { code: string, message: string } }} */ (await page.connectError())
      assert.equal(err.data?.code, 'FORBIDDEN')
      assert.match(err.data?.message ?? '', /^the origin http:\/\/localhost:5173 is not allowed: add it to CORS_ORIGIN/)
    }
    assert.equal(refusals().length, 1, 'the second refusal within 10 s is counted, not logged')
    const [line] = refusals()
    assert.equal(line.level, 40)
    assert.equal(line.msg, 'socket.connect refused')
    assert.equal(line.code, 'FORBIDDEN')
    assert.equal(line.origin, 'http://localhost:5173')
    assert.equal(line.corsOrigin, 'https://editor.example')
    assert.match(line.reason, /add it to CORS_ORIGIN/)
    assert.ok(!JSON.stringify(lines).includes('"message":null'), 'no refusal without its reason')
  })

  it('always admits the server\'s own origin, REST and handshake, whatever CORS_ORIGIN lists', async (t) => {
    const tandem = await startServer({ corsOrigin: 'http://localhost:5173' })
    t.after(() => tandem.close())
    const own = { origin: tandem.url }
    const created = await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'own' }, headers: own })
    assert.equal(created.status, 201)
    assert.equal(created.headers.get('access-control-allow-origin'), tandem.url)
    const ownPage = new TestEditor(tandem.url, { extraHeaders: own })
    t.after(() => ownPage.close())
    assert.equal((await ownPage.join(created.body.id)).ok, true)
    // Own means this Host: a page elsewhere that names this server's port is not.
    const { port } = new URL(tandem.url)
    const other = new TestEditor(tandem.url, { extraHeaders: { origin: `http://elsewhere.example:${port}` } })
    t.after(() => other.close())
    assert.equal(/** @type {any} */ (await other.connectError()).data?.code, 'FORBIDDEN')
  })
})
