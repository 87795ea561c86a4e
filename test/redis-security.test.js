import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { EVENTS } from '../isomorphic/events.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { missing } from './helpers/processes.js'
import { startRedis } from './helpers/redis.js'
import { api, startServer } from './helpers/server.js'

// Two servers sharing one Redis stand in for two workers or hosts: access and per-IP limits must
// hold across them, not per process.

const AUTH = { authSecret: 'a-cluster-secret-of-at-least-32-chars!', apiKey: 'cluster-api-key-0123' }
const KEY = { authorization: `Bearer ${AUTH.apiKey}` }

/**
 * Two servers on one real Redis for the suite that calls it, started before its tests and closed,
 * with the editors it made, after them.
 * @param {Partial<import('../server/config.js').Config>} overrides
 */
function twoServersOnOneRedis (overrides) {
  const cluster = {
    /** @type {Awaited<ReturnType<typeof startRedis>>} */ redis: /** @type {any} */ (null),
    /** @type {Awaited<ReturnType<typeof startServer>>} */ a: /** @type {any} */ (null),
    /** @type {Awaited<ReturnType<typeof startServer>>} */ b: /** @type {any} */ (null),
    /** @type {TestEditor[]} */ editors: [],
    /** @param {{ url: string }} server @param {string} token */
    editorOn (server, token) {
      const editor = new TestEditor(server.url, { auth: { token } })
      cluster.editors.push(editor)
      return editor
    }
  }
  before(async () => {
    cluster.redis = await startRedis()
    cluster.a = await startServer({ redisUrl: cluster.redis.url, nodeName: 'host-a', ...overrides, ...AUTH })
    cluster.b = await startServer({ redisUrl: cluster.redis.url, nodeName: 'host-b', ...overrides, ...AUTH })
  })
  after(async () => {
    for (const editor of cluster.editors) editor.close()
    await cluster.a?.close()
    await cluster.b?.close()
    await cluster.redis?.remove()
  })
  return cluster
}

describe('security across two servers sharing one Redis', { skip: missing('redis-server') }, () => {
  const cluster = twoServersOnOneRedis({ restPerMinute: 10 })
  const { editorOn } = cluster

  it('closes the document on the other server when a token minted on one is revoked there', async () => {
    const { body: session } = await api(cluster.a.url, '/api/sessions', { method: 'POST', body: { name: 'shared' }, headers: KEY })
    const mint = async (/** @type {string} */ user) => (await api(cluster.a.url, `/api/sessions/${session.id}/tokens`, { method: 'POST', body: { user, role: 'editor' }, headers: KEY })).body
    const alice = await mint('alice')
    const bob = await mint('bob')
    const [aliceOnB, bobOnA] = [editorOn(cluster.b, alice.token), editorOn(cluster.a, bob.token)]
    assert.equal((await aliceOnB.join(session.id)).ok, true)
    assert.equal((await bobOnA.join(session.id)).ok, true)

    assert.equal((await api(cluster.a.url, `/api/sessions/${session.id}/tokens/${alice.tokenId}`, { method: 'DELETE', headers: KEY })).status, 204)
    await eventually(() => aliceOnB.received.some(r => r.event === EVENTS.CLOSED && r.payload.reason === 'revoked'))
    const again = await editorOn(cluster.b, alice.token).connectError()
    assert.equal(/** @type {any} */ (again).data.code, 'UNAUTHORIZED', 'server B refuses the revoked token too')
    assert.deepEqual(await bobOnA.insert(session.id, 0, 'bob goes on'), { ok: true })
  })

  it('counts a client\'s REST requests across both servers', async () => {
    const statuses = []
    for (let i = 0; i < 12; i++) statuses.push((await api(i % 2 ? cluster.a.url : cluster.b.url, '/api/sessions', { headers: KEY })).status)
    // The first test made 4 REST calls on server A; together with these, 10 pass per minute.
    const passed = statuses.filter(status => status === 200).length
    assert.equal(passed, 10 - 4)
    assert.ok(statuses.slice(passed).every(status => status === 429), `${statuses}`)
  })
})

describe('user revocation across two servers whose clocks disagree', { skip: missing('redis-server') }, () => {
  const cluster = twoServersOnOneRedis({})
  const { editorOn } = cluster
  // Expiry still reads the clock: a token minted on A expires an hour early by B's, so it lives two.
  /** @param {{ url: string }} server @param {string} session @param {string} user */
  const mint = async (server, session, user) =>
    (await api(server.url, `/api/sessions/${session}/tokens`, { method: 'POST', body: { user, role: 'editor', ttl: 7200 }, headers: KEY })).body.token

  for (const [step, stepMs] of /** @type {const} */ ([['an hour', 3_600_000], ['two seconds', 2000]])) {
    it(`refuses on server B a user revoked on server A, whose clock is ${step} behind B's, and admits a token A mints afterwards`, async (t) => {
      const { body: session } = await api(cluster.b.url, '/api/sessions', { method: 'POST', body: { name: 'skewed' }, headers: KEY })
      const token = await mint(cluster.b, session.id, 'alice')
      assert.equal((await editorOn(cluster.b, token).joinOutcome(session.id)).code, 'joined')

      t.mock.timers.enable({ apis: ['Date'], now: Date.now() - stepMs })
      assert.equal((await api(cluster.a.url, `/api/sessions/${session.id}/tokens?user=alice`, { method: 'DELETE', headers: KEY })).status, 204)
      const fresh = await mint(cluster.a, session.id, 'alice')
      t.mock.timers.reset()

      const refused = await editorOn(cluster.b, token).joinOutcome(session.id)
      assert.equal(refused.code, 'UNAUTHORIZED', 'server B refuses the revoked token')
      assert.match(refused.message, /revoked/)
      const alice = editorOn(cluster.b, fresh)
      assert.equal((await alice.joinOutcome(session.id)).code, 'joined', 'the token minted after the revocation works on B')
      assert.deepEqual(await alice.insert(session.id, 0, 'back'), { ok: true })
    })
  }

  it('loses no revocation of a user when several are recorded at once', async () => {
    const { body: session } = await api(cluster.a.url, '/api/sessions', { method: 'POST', body: { name: 'many' }, headers: KEY })
    const stores = [cluster.a, cluster.b].map(server => server.server.backend.sessionStore)
    const generations = await Promise.all(Array.from({ length: 8 }, (_, i) => stores[i % 2].increment(session.id, 'gen:gus')))
    assert.deepEqual(generations.sort((x, y) => x - y), [1, 2, 3, 4, 5, 6, 7, 8])
  })
})

describe('seats across two servers sharing one Redis', { skip: missing('redis-server') }, () => {
  const cluster = twoServersOnOneRedis({ maxConnectionsPerUser: 3 })
  const { editorOn } = cluster
  /** @param {number} maxEditors */
  const newSession = async (maxEditors) =>
    (await api(cluster.a.url, '/api/sessions', { method: 'POST', body: { name: 'seats', maxEditors }, headers: KEY })).body.id
  /** @param {string} session @param {string} user @param {'editor' | 'viewer'} role */
  const mint = async (session, user, role) =>
    (await api(cluster.b.url, `/api/sessions/${session}/tokens`, { method: 'POST', body: { user, role }, headers: KEY })).body.token

  it('caps one viewer user\'s connections to a document over both servers, not per server, and keeps the owner\'s seat', async () => {
    const id = await newSession(5)
    const token = await mint(id, 'victor', 'viewer')
    const servers = [cluster.a, cluster.b, cluster.a, cluster.b, cluster.a, cluster.b, cluster.a, cluster.b]
    const flood = servers.map(server => editorOn(server, token))
    await Promise.all(flood.map(editor => editor.connected()))
    const replies = await Promise.all(flood.map(editor => editor.join(id)))
    const admitted = replies.flatMap((reply, i) => reply.ok ? [i] : [])
    assert.equal(admitted.length, 3, JSON.stringify(replies.map(reply => reply.ok || reply.error.code)))
    assert.ok(replies.every(reply => reply.ok || reply.error.code === 'RATE_LIMITED'))

    const owner = editorOn(cluster.b, await mint(id, 'olive', 'editor'))
    const joined = await owner.join(id)
    assert.equal(joined.ok, true, JSON.stringify(joined))
    assert.deepEqual(await owner.insert(id, 0, 'mine'), { ok: true })
    assert.equal((await api(cluster.a.url, `/api/sessions/${id}`, { headers: KEY })).body.editors, 1, 'viewers hold no editor seat')

    const leaver = admitted[0]
    await flood[leaver].request(EVENTS.LEAVE, { doc: id })
    const again = await editorOn(servers[leaver] === cluster.a ? cluster.b : cluster.a, token).join(id)
    assert.equal(again.ok, true, 'the connection a leave frees is free on the other server')
    assert.equal((await editorOn(cluster.a, token).join(id)).error?.code, 'RATE_LIMITED')
  })

  it('caps an editor user\'s connections over both servers, and leaves the other editor seats to other users', async () => {
    const id = await newSession(4)
    const token = await mint(id, 'alice', 'editor')
    const replies = []
    for (const server of [cluster.a, cluster.b, cluster.a, cluster.b]) replies.push(await editorOn(server, token).join(id))
    assert.deepEqual(replies.map(reply => reply.ok ? 'ok' : reply.error.code), ['ok', 'ok', 'ok', 'RATE_LIMITED'])
    const bob = await editorOn(cluster.b, await mint(id, 'bob', 'editor')).join(id)
    assert.equal(bob.ok, true, JSON.stringify(bob))
    assert.equal(bob.editors, 4)
    assert.equal((await editorOn(cluster.a, await mint(id, 'carol', 'editor')).join(id)).error?.code, 'ROOM_FULL')
  })
})
