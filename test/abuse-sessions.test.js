import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import * as decoding from 'lib0/decoding'
import pino from 'pino'
import { Awareness, applyAwarenessUpdate } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { guardRemoteUsers, safeColor } from '../client/src/page/user.js'
import { createServer } from '../server/app.js'
import { TokenIssuer } from '../server/auth/tokens.js'
import { loadConfig } from '../server/config.js'
import { CLOSE_REASONS, EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { TestEditor, awarenessUpdate, awarenessUpdates, cursorIn } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { deferrals } from './helpers/processes.js'
import { api, createSession, rawRequest, startServer, tempDataDir } from './helpers/server.js'

// Small inputs must not cost large resources, nor outlast the rights they were sent with: each
// test sends what an abusive client sent, against a real server, and checks what the server holds
// and answers afterwards.

const AUTH = { authSecret: 'an-abuse-test-secret-of-32-characters!', apiKey: 'abuse-api-key-0123456' }
const KEY = { authorization: `Bearer ${AUTH.apiKey}` }
// Every test here connects from 127.0.0.1: the per-IP limits are the subject of other suites.
const NO_IP_LIMITS = { connectionsPerMinute: 0, joinsPerMinute: 0, restPerMinute: 0 }

/** Client ids in an awareness update (a join reply's `awareness`). @param {Uint8Array} update */
function awarenessClientsOf (update) {
  const decoder = decoding.createDecoder(update)
  const ids = []
  for (let i = decoding.readVarUint(decoder); i > 0; i--) {
    ids.push(decoding.readVarUint(decoder))
    decoding.readVarUint(decoder)
    decoding.readVarString(decoder)
  }
  return ids
}

describe('abusive clients of a server with auth on', { timeout: 60000 }, () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {TestEditor[]} */
  const editors = []

  before(async () => {
    tandem = await startServer({ ...AUTH, ...NO_IP_LIMITS, maxConnectionsPerUser: 3 })
  })
  after(async () => {
    for (const editor of editors) editor.close()
    await tandem.close()
  })

  /** @param {string} token */
  const editorWith = (token) => {
    const editor = new TestEditor(tandem.url, { auth: { token } })
    editors.push(editor)
    return editor
  }
  /** @param {{ maxEditors?: number }} [fields] */
  const newSession = async (fields = {}) =>
    (await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'abuse', ...fields }, headers: KEY })).body.id
  /** @param {string} session @param {string} user @param {'editor' | 'viewer'} role */
  const mint = async (session, user, role) => {
    const res = await api(tandem.url, `/api/sessions/${session}/tokens`, { method: 'POST', body: { user, role }, headers: KEY })
    assert.equal(res.status, 201, JSON.stringify(res.body))
    return res.body
  }
  /** @param {TestEditor} editor @param {string} doc @param {Uint8Array} update */
  const sendAwareness = (editor, doc, update) => editor.request(EVENTS.AWARENESS, { doc, update })

  it('refuses an awareness state over MAX_AWARENESS_STATE_BYTES with TOO_LARGE, and holds nothing of it', async () => {
    const id = await newSession()
    const viewer = editorWith((await mint(id, 'victor', 'viewer')).token)
    await viewer.join(id)
    const reply = await sendAwareness(viewer, id, awarenessUpdate(501, 1, { user: { name: 'v' }, blob: 'x'.repeat(64 * 1024) }))
    assert.equal(reply.error?.code, 'TOO_LARGE', JSON.stringify(reply))
    const joiner = editorWith((await mint(id, 'alice', 'editor')).token)
    const joined = await joiner.join(id)
    assert.deepEqual(awarenessClientsOf(joined.awareness), [], 'a joiner is sent no state')
    assert.ok(joined.awareness.byteLength < 16)
    const cursor = await sendAwareness(viewer, id, awarenessUpdate(501, 2, { user: { name: 'v', color: '#268bd2' }, cursor: cursorIn(viewer.ydoc(id), 1, 4) }))
    assert.deepEqual(cursor, { ok: true }, 'a cursor-sized state is accepted')
  })

  it('refuses awareness users whose colour is not hex (#rrggbb, #rgb) or whose name holds control characters, with INVALID_UPDATE', async () => {
    const id = await newSession()
    const viewer = editorWith((await mint(id, 'victor', 'viewer')).token)
    const alice = editorWith((await mint(id, 'alice', 'editor')).token)
    await viewer.join(id)
    await alice.join(id)
    const overlay = 'red; position: fixed; inset: 0; z-index: 9999; content: ""'
    const hostile = [
      { name: 'v', color: overlay },
      { name: 'v', color: '#268bd2', colorLight: `${overlay}33` },
      { name: 'v', color: 'url(https://evil.example/x.png)' },
      { name: 'v', color: 42 },
      { name: 'v', color: '#12345' },
      { name: 'line\nbreak', color: '#268bd2' },
      { name: 'right\u202Eto-left', color: '#268bd2' },
      { name: 'x'.repeat(65), color: '#268bd2' },
      'not an object'
    ]
    for (const [i, user] of hostile.entries()) {
      const reply = await sendAwareness(viewer, id, awarenessUpdate(600 + i, 1, { user }))
      assert.equal(reply.error?.code, 'INVALID_UPDATE', `${JSON.stringify(user)}: ${JSON.stringify(reply)}`)
    }
    assert.equal(alice.received.filter(r => r.event === EVENTS.AWARENESS).length, 0, 'nothing was relayed')
    const fine = await sendAwareness(viewer, id, awarenessUpdate(700, 1, { user: { name: 'Victor 🎨', color: '#268BD2', colorLight: '#268bd233' } }))
    assert.deepEqual(fine, { ok: true })
  })

  it('refuses a join whose token is revoked while the join is under way, so the socket cannot edit', async () => {
    const id = await newSession()
    const minted = await mint(id, 'mallory', 'editor')
    const mallory = editorWith(minted.token)
    await mallory.connected()
    // The revocation lands after the join checked the token and before the socket is attached.
    const sessions = tandem.server.sessions
    const record = sessions.record
    let revoking = true
    sessions.record = async (/** @type {string} */ docId) => {
      const found = await record.call(sessions, docId)
      if (revoking) {
        revoking = false
        const res = await api(tandem.url, `/api/sessions/${id}/tokens/${minted.tokenId}`, { method: 'DELETE', headers: KEY })
        assert.equal(res.status, 204)
      }
      return found
    }
    try {
      const joined = await mallory.join(id)
      assert.equal(joined.error?.code, 'UNAUTHORIZED', JSON.stringify(joined))
    } finally {
      sessions.record = record
    }
    const edit = await mallory.request(EVENTS.UPDATE, { doc: id, update: Y.encodeStateAsUpdate(editDoc('vandal')) })
    assert.equal(edit.error?.code, 'NOT_JOINED')
    assert.equal(tandem.server.registry.editorCount(id), 0)
  })

  it('refuses a handshake with a revoked token', async () => {
    const id = await newSession()
    const minted = await mint(id, 'mallory', 'viewer')
    assert.equal((await api(tandem.url, `/api/sessions/${id}/tokens/${minted.tokenId}`, { method: 'DELETE', headers: KEY })).status, 204)
    const mallory = editorWith(minted.token)
    const refused = await new Promise(resolve => {
      mallory.socket.once('connect', () => resolve({ data: { code: 'connected', message: '' } }))
      mallory.socket.once('connect_error', resolve)
    })
    assert.equal(refused.data.code, 'UNAUTHORIZED')
    assert.match(refused.data.message, /revoked/)
  })

  it('bounds the connections one user joins a document with, so one viewer token cannot fill the room and lock the owner out', async () => {
    const id = await newSession({ maxEditors: 5 })
    const { token } = await mint(id, 'victor', 'viewer')
    const replies = []
    for (let i = 0; i < 5; i++) replies.push(await editorWith(token).join(id))
    const limit = 3
    assert.deepEqual(replies.map(reply => reply.ok ? 'ok' : reply.error.code),
      [...Array(limit).fill('ok'), ...Array(5 - limit).fill('RATE_LIMITED')])
    const owner = editorWith((await mint(id, 'olive', 'editor')).token)
    const joined = await owner.join(id)
    assert.equal(joined.ok, true, JSON.stringify(joined))
    assert.deepEqual(await owner.insert(id, 0, 'mine'), { ok: true })
  })

  it('lets an editor join a session of maxEditors 3 that three viewer users have joined: viewers take no editor seat', async () => {
    const id = await newSession({ maxEditors: 3 })
    for (const user of ['vera', 'vince', 'viola']) {
      const watching = await editorWith((await mint(id, user, 'viewer')).token).join(id)
      assert.equal(watching.ok, true, JSON.stringify(watching))
    }
    const owner = editorWith((await mint(id, 'olive', 'editor')).token)
    const joined = await owner.join(id)
    assert.equal(joined.ok, true, JSON.stringify(joined))
    assert.equal(joined.editors, 1, 'viewers are not editors')
    assert.deepEqual(await owner.insert(id, 0, 'mine'), { ok: true })
    for (const user of ['alice', 'bob']) assert.equal((await editorWith((await mint(id, user, 'editor')).token).join(id)).ok, true)
    const fourth = await editorWith((await mint(id, 'carol', 'editor')).token).join(id)
    assert.equal(fourth.error?.code, 'ROOM_FULL', 'editors are still bounded by maxEditors')
    assert.equal((await api(tandem.url, `/api/sessions/${id}`, { headers: KEY })).body.editors, 3)
  })

  it('keeps a departed editor\'s awareness client id bound to that editor for AWARENESS_ID_HOLD_MS', async () => {
    const id = await newSession()
    const aliceToken = (await mint(id, 'alice', 'editor')).token
    const alice = editorWith(aliceToken)
    const victor = editorWith((await mint(id, 'victor', 'viewer')).token)
    await alice.join(id)
    await victor.join(id)
    const cursor = { user: { name: 'Alice', color: '#d33682' } }
    assert.deepEqual(await sendAwareness(alice, id, awarenessUpdate(4242, 1, cursor)), { ok: true })
    alice.close()
    // Victor learns the id from the removal broadcast, then claims it.
    await eventually(() => victor.received.some(r => r.event === EVENTS.AWARENESS && awarenessClientsOf(r.payload.update).includes(4242)))
    const claim = await sendAwareness(victor, id, awarenessUpdate(4242, 3, { user: { name: 'Alice', color: '#d33682' } }))
    assert.equal(claim.error?.code, 'FORBIDDEN', JSON.stringify(claim))
    const back = editorWith(aliceToken)
    await back.join(id)
    assert.deepEqual(await sendAwareness(back, id, awarenessUpdate(4242, 3, cursor)), { ok: true }, 'alice takes her id back')
  })

  it('closes a membership when its token expires, with doc:closed reason expired, and refuses the re-join', async () => {
    const id = await newSession()
    const { token } = await new TokenIssuer(AUTH.authSecret).issue({ session: id, user: 'eve', role: 'editor', generation: 0, ttlSeconds: 2 })
    const eve = editorWith(token)
    assert.equal((await eve.join(id)).ok, true)
    assert.deepEqual(await eve.insert(id, 0, 'before'), { ok: true })
    await eventually(() => eve.received.some(r => r.event === EVENTS.CLOSED), { timeoutMs: 4000 })
    assert.deepEqual(eve.received.find(r => r.event === EVENTS.CLOSED)?.payload, { doc: id, reason: CLOSE_REASONS.EXPIRED })
    assert.equal(CLOSE_REASONS.EXPIRED, 'expired')
    assert.equal((await eve.insert(id, 0, 'after')).error?.code, 'NOT_JOINED')
    const again = await eve.join(id)
    assert.equal(again.error?.code, 'UNAUTHORIZED')
    assert.match(again.error.message, /expired/)
    assert.equal(tandem.server.registry.editorCount(id), 0)
  })
})

describe('abusive clients of a server with auth off', { timeout: 60000 }, () => {
  it('refuses awareness past MAX_AWARENESS_BYTES per document with TOO_LARGE, and holds nothing of it', async (t) => {
    const defer = deferrals(t)
    const tandem = await startServer({ ...NO_IP_LIMITS, maxAwarenessStateBytes: 1024, maxAwarenessBytes: 2048 })
    defer(() => tandem.close())
    const { id } = await createSession(tandem.url)
    const flooder = new TestEditor(tandem.url)
    defer(() => flooder.close())
    await flooder.join(id)
    // ~0.8 KB that the server keeps whole: a long name, and positions of the largest numbers.
    const far = { type: { client: Number.MAX_SAFE_INTEGER, clock: Number.MAX_SAFE_INTEGER }, tname: TEXT_NAME, item: { client: Number.MAX_SAFE_INTEGER, clock: Number.MAX_SAFE_INTEGER }, assoc: 0 }
    const state = (/** @type {number} */ n) => ({ user: { name: `f${n}${'字'.repeat(60)}` }, cursor: { anchor: far, head: far }, selection: { anchor: far, head: far } })
    assert.deepEqual(await flooder.request(EVENTS.AWARENESS, { doc: id, update: awarenessUpdates([[1, 1, state(1)], [2, 1, state(2)]]) }), { ok: true })
    const third = await flooder.request(EVENTS.AWARENESS, { doc: id, update: awarenessUpdate(3, 1, state(3)) })
    assert.equal(third.error?.code, 'TOO_LARGE', JSON.stringify(third))
    const joiner = new TestEditor(tandem.url)
    defer(() => joiner.close())
    const joined = await joiner.join(id)
    assert.deepEqual(awarenessClientsOf(joined.awareness).sort(), [1, 2])
    assert.ok(joined.awareness.byteLength <= 2048 + 64)
    // Freeing space makes room again.
    assert.deepEqual(await flooder.request(EVENTS.AWARENESS, { doc: id, update: awarenessUpdate(1, 2, null) }), { ok: true })
    assert.deepEqual(await flooder.request(EVENTS.AWARENESS, { doc: id, update: awarenessUpdate(3, 1, state(3)) }), { ok: true })
  })

  it('counts joins in flight against MAX_DOCS_PER_SOCKET', async (t) => {
    const defer = deferrals(t)
    const tandem = await startServer({ ...NO_IP_LIMITS, maxDocsPerSocket: 5 })
    defer(() => tandem.close())
    const ids = []
    for (let i = 0; i < 12; i++) ids.push((await createSession(tandem.url)).id)
    const editor = new TestEditor(tandem.url)
    defer(() => editor.close())
    await editor.connected()
    const replies = await Promise.all(ids.map(doc => editor.request(EVENTS.JOIN, { doc })))
    assert.equal(replies.filter(reply => reply.ok).length, 5)
    assert.ok(replies.filter(reply => !reply.ok).every(reply => reply.error.code === 'RATE_LIMITED'))
    assert.equal(ids.reduce((sum, doc) => sum + tandem.server.registry.editorCount(doc), 0), 5)
  })

  it('binds 127.0.0.1 and serves only its own origin unless HOST and CORS_ORIGIN say otherwise, and says so at start-up', async (t) => {
    const defer = deferrals(t)
    assert.equal(loadConfig({}).host, '127.0.0.1')
    assert.equal(loadConfig({}).corsOrigin, 'same-origin')
    const told = loadConfig({ HOST: '0.0.0.0', CORS_ORIGIN: '*' })
    assert.deepEqual([told.host, told.corsOrigin], ['0.0.0.0', '*'])
    const secured = loadConfig({ AUTH_SECRET: AUTH.authSecret, API_KEY: AUTH.apiKey })
    assert.deepEqual([secured.host, secured.corsOrigin], ['0.0.0.0', '*'])

    /** @type {string[]} */
    const lines = []
    const data = await tempDataDir()
    defer(() => data.remove())
    const config = loadConfig({ PORT: '0', DATA_DIR: data.dir })
    const logger = pino({ level: 'info' }, new Writable({ write (chunk, encoding, done) { lines.push(String(chunk)); done() } }))
    const server = await createServer(config, { logger })
    defer(() => server.close())
    const { url, host } = await server.listen()
    assert.equal(host, '127.0.0.1')
    const warning = lines.map(line => JSON.parse(line)).find(entry => /AUTH IS OFF/.test(entry.msg))
    assert.match(warning?.msg ?? '', /127\.0\.0\.1/)
    assert.match(warning?.msg ?? '', /same-origin/)

    const evil = { origin: 'https://evil.example' }
    const created = await api(url, '/api/sessions', { method: 'POST', body: { name: 'x' }, headers: evil })
    assert.equal(created.status, 403, JSON.stringify(created.body))
    assert.equal(created.body.error.code, 'FORBIDDEN')
    assert.equal(created.headers.get('access-control-allow-origin'), null)
    const listed = await api(url, '/api/sessions', { headers: evil })
    assert.equal(listed.status, 403)
    const own = await api(url, '/api/sessions', { method: 'POST', body: { name: 'x' }, headers: { origin: url } })
    assert.equal(own.status, 201, 'the server\'s own page may call it')
    assert.equal((await api(url, '/api/sessions', { method: 'POST', body: { name: 'y' } })).status, 201, 'clients that are not browsers may call it')

    const page = new TestEditor(url, { extraHeaders: evil })
    defer(() => page.close())
    const outcome = await new Promise(resolve => {
      page.socket.once('connect', () => resolve('connected'))
      page.socket.once('connect_error', () => resolve('refused'))
    })
    assert.equal(outcome, 'refused')
    const ownPage = new TestEditor(url, { extraHeaders: { origin: url } })
    defer(() => ownPage.close())
    assert.equal((await ownPage.join(own.body.id)).ok, true)

    // DNS rebinding: another site's name resolved to 127.0.0.1, so its page's requests are
    // same-origin to the browser. Only this machine's names are answered.
    const { port } = new URL(url)
    const rebound = `evil.example:${port}`
    for (const [method, path] of [['GET', '/api/sessions'], ['GET', `/api/sessions/${own.body.id}/content`], ['POST', '/api/sessions']]) {
      const answer = await rawRequest(url, method, path, { host: rebound, origin: `http://${rebound}`, 'content-type': 'application/json' }, method === 'POST' ? '{"name":"z"}' : undefined)
      assert.equal(answer.status, 403, `${method} ${path}`)
      assert.match(answer.body, /"code":"FORBIDDEN"/)
    }
    const handshake = await rawRequest(url, 'GET', '/socket.io/?EIO=4&transport=polling', { host: rebound })
    assert.equal(handshake.status, 403, 'the Socket.IO handshake too')
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`]) {
      assert.equal((await rawRequest(url, 'GET', '/api/sessions', { host })).status, 200, host)
    }
  })
})

describe('the shipped page', () => {
  it('draws a remote user whose colour is not hex in a neutral colour, and strips control characters from its name', (t) => {
    const local = new Awareness(new Y.Doc())
    const remote = new Awareness(new Y.Doc())
    // An Awareness runs an interval timer until destroyed.
    t.after(() => { local.destroy(); remote.destroy() })
    guardRemoteUsers(local)
    /** @type {unknown[]} */
    const seenByEditor = []
    local.on('change', () => seenByEditor.push(local.getStates().get(remote.clientID)?.user))
    const overlay = 'red; position: fixed; inset: 0'
    remote.setLocalState({ user: { name: 'Mal\nlory', color: overlay, colorLight: overlay } })
    applyAwarenessUpdate(local, encodeState(remote), 'server')
    const drawn = local.getStates().get(remote.clientID)?.user
    assert.deepEqual(drawn, { name: 'Mallory', color: '#808080', colorLight: '#80808033' })
    assert.deepEqual(seenByEditor, [drawn], 'listeners added afterwards only ever see the safe user')
    remote.setLocalState({ user: { name: 'Mallory', color: '#dc322f', colorLight: '#dc322f33' } })
    applyAwarenessUpdate(local, encodeState(remote), 'server')
    assert.deepEqual(local.getStates().get(remote.clientID)?.user, { name: 'Mallory', color: '#dc322f', colorLight: '#dc322f33' })
    assert.equal(safeColor('#abcdef'), '#abcdef')
    assert.equal(safeColor('#abcdef; top: 0'), '#808080')
    assert.equal(safeColor(undefined), '#808080')
  })
})

/** @param {Awareness} awareness */
function encodeState (awareness) {
  return awarenessUpdates([[awareness.clientID, /** @type {any} */ (awareness.meta.get(awareness.clientID)).clock, awareness.getLocalState()]])
}

/** A Y.Doc whose text is `text`. @param {string} text */
function editDoc (text) {
  const ydoc = new Y.Doc()
  ydoc.getText('content').insert(0, text)
  return ydoc
}
