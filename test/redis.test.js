import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as awarenessProtocol from 'y-protocols/awareness'
import * as Y from 'yjs'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { TestEditor, editorPool } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { deferrals, missing } from './helpers/processes.js'
import { startRedis } from './helpers/redis.js'
import { api, contentOf, createSession, startServer } from './helpers/server.js'

// Two server instances sharing one Redis stand in for two hosts (or two PM2 workers): an editor on
// server A and an editor on server B of the same session must behave as if in one process.

for (const redisAdapter of /** @type {const} */ (['sharded', 'classic'])) {
  describe(`two servers sharing one Redis (${redisAdapter} adapter)`, { skip: missing('redis-server') }, () => {
    /** @type {Awaited<ReturnType<typeof startRedis>>} */
    let redis
    /** @type {Awaited<ReturnType<typeof startServer>>} */
    let a
    /** @type {Awaited<ReturnType<typeof startServer>>} */
    let b
    const pool = editorPool()
    const editorOn = pool.on

    before(async () => {
      redis = await startRedis()
      a = await startServer({ redisUrl: redis.url, redisAdapter, nodeName: 'host-a' })
      b = await startServer({ redisUrl: redis.url, redisAdapter, nodeName: 'host-b' })
    })
    after(async () => {
      pool.closeAll()
      await a?.close()
      await b?.close()
      await redis?.remove()
    })

    it('delivers an update from an editor on server A to an editor on server B, and back', async () => {
      const session = await createSession(a.url, { content: 'fn main() {}\n' })
      const [alice, bob] = [editorOn(a), editorOn(b)]
      await alice.join(session.id)
      await bob.join(session.id)
      assert.equal(bob.text(session.id), 'fn main() {}\n')
      assert.deepEqual(await alice.insert(session.id, 0, '// A\n'), { ok: true })
      await eventually(() => bob.text(session.id) === '// A\nfn main() {}\n')
      assert.deepEqual(await bob.insert(session.id, bob.text(session.id).length, '// B\n'), { ok: true })
      await eventually(() => alice.text(session.id) === '// A\nfn main() {}\n// B\n')
      for (const server of [a, b]) assert.equal(await contentOf(server.url, session.id), alice.text(session.id))
    })

    it('makes editors on both servers typing concurrently converge', async () => {
      const session = await createSession(b.url)
      const group = [editorOn(a), editorOn(b), editorOn(a), editorOn(b)]
      for (const editor of group) await editor.join(session.id)
      /** @type {ReturnType<TestEditor['insert']>[]} */
      const acks = []
      for (let round = 0; round < 20; round++) {
        group.forEach((editor, i) => acks.push(editor.insert(session.id, 0, `${i}.${round};`)))
      }
      assert.ok((await Promise.all(acks)).every(reply => reply.ok))
      const expectedLength = 4 * (10 * 4 + 10 * 5)
      await eventually(() => group.every(editor => editor.text(session.id).length === expectedLength &&
        editor.text(session.id) === group[0].text(session.id)))
      assert.equal(await contentOf(a.url, session.id), group[0].text(session.id))
      assert.equal(await contentOf(b.url, session.id), group[0].text(session.id))
    })

    it('gives a late joiner on server B the edits server A acknowledged a moment earlier', async () => {
      const session = await createSession(a.url)
      const bob = editorOn(b)
      await bob.join(session.id) // server B now holds the document in memory
      await bob.request(EVENTS.LEAVE, { doc: session.id })
      const alice = editorOn(a)
      await alice.join(session.id)
      for (let i = 0; i < 20; i++) assert.deepEqual(await alice.insert(session.id, alice.text(session.id).length, `${i} `), { ok: true })
      const carol = editorOn(b)
      await carol.join(session.id)
      assert.equal(carol.text(session.id), alice.text(session.id))
    })

    it('keeps an editor who joins on server B while an editor on server A types in step with every update', async () => {
      // Each join on B opens the room there, so B subscribes to it afresh while A's edits keep
      // coming: an update broadcast just before B listens must reach the joiner through its state.
      const sessions = await Promise.all(Array.from({ length: 8 }, () => createSession(a.url)))
      const pairs = await Promise.all(sessions.map(async (session) => {
        const alice = editorOn(a)
        await alice.join(session.id)
        return { session, alice, bob: editorOn(b) }
      }))
      await Promise.all(pairs.map(async ({ session, alice, bob }, i) => {
        const typing = (async () => {
          for (let n = 0; n < 60; n++) assert.equal((await alice.insert(session.id, 0, 'x')).ok, true)
        })()
        // Staggered on purpose, so that the joins land at different points of the typing.
        await new Promise(resolve => setTimeout(resolve, 5 + 7 * i))
        assert.equal((await bob.join(session.id)).ok, true)
        await typing
      }))
      await eventually(() => pairs.every(({ session, alice, bob }) => alice.text(session.id) === 'x'.repeat(60) && bob.text(session.id) === alice.text(session.id)))
    })

    it('relays cursors across servers and removes them when the socket drops', async () => {
      const session = await createSession(a.url)
      const [alice, bob] = [editorOn(a), editorOn(b)]
      await alice.join(session.id)
      await bob.join(session.id)
      const aliceAwareness = new awarenessProtocol.Awareness(alice.ydoc(session.id))
      aliceAwareness.setLocalState({ user: { name: 'Alice' } })
      alice.socket.emit(EVENTS.AWARENESS, { doc: session.id, update: awarenessProtocol.encodeAwarenessUpdate(aliceAwareness, [aliceAwareness.clientID]) })
      const seen = new awarenessProtocol.Awareness(new Y.Doc())
      bob.socket.on(EVENTS.AWARENESS, ({ update }) => awarenessProtocol.applyAwarenessUpdate(seen, new Uint8Array(update), 'server'))
      await eventually(() => seen.getStates().get(aliceAwareness.clientID)?.user?.name === 'Alice')
      alice.close()
      await eventually(() => !seen.getStates().has(aliceAwareness.clientID))
      aliceAwareness.destroy()
      seen.destroy()
    })

    it('answers the REST API the same from both servers, with cluster-wide editor counts', async () => {
      const session = await createSession(a.url, { maxEditors: 2 })
      const alice = editorOn(a)
      await alice.join(session.id)
      const fromB = await api(b.url, `/api/sessions/${session.id}`)
      assert.deepEqual(fromB.body, { ...session, editors: 1 })
      await editorOn(b).join(session.id)
      assert.equal((await api(a.url, `/api/sessions/${session.id}`)).body.editors, 2)
      const listed = (await api(b.url, '/api/sessions?limit=100')).body.sessions.find((/** @type {any} */ s) => s.id === session.id)
      assert.equal(listed.editors, 2)
      const third = await editorOn(b).join(session.id)
      assert.equal(third.error?.code, 'ROOM_FULL', 'maxEditors counts editors on every server')
      await api(b.url, `/api/sessions/${session.id}`, { method: 'PATCH', body: { name: 'renamed on B' } })
      assert.equal((await api(a.url, `/api/sessions/${session.id}`)).body.name, 'renamed on B')
    })

    it('admits exactly maxEditors of editors joining on both servers at the same moment, and frees a seat at once on leave', async () => {
      const session = await createSession(a.url, { maxEditors: 3 })
      const servers = [a, b, a, b, a, b, a, b]
      const group = servers.map(server => editorOn(server))
      await Promise.all(group.map(editor => editor.connected()))
      const replies = await Promise.all(group.map(editor => editor.join(session.id)))
      const admitted = replies.flatMap((reply, i) => reply.ok ? [i] : [])
      assert.equal(admitted.length, 3, `admitted ${admitted.length}: ${JSON.stringify(replies.map(reply => reply.ok || reply.error.code))}`)
      assert.ok(replies.every(reply => reply.ok || reply.error.code === 'ROOM_FULL'))
      assert.equal((await api(b.url, `/api/sessions/${session.id}`)).body.editors, 3)
      const leaver = admitted[0]
      await group[leaver].request(EVENTS.LEAVE, { doc: session.id })
      const onOther = editorOn(servers[leaver] === a ? b : a)
      assert.equal((await onOther.join(session.id)).ok, true, 'the seat a leave frees is free on the other server')
      assert.equal((await editorOn(a).join(session.id)).error?.code, 'ROOM_FULL')
    })

    it('closes a session deleted on server A for its editors on server B', async () => {
      const session = await createSession(a.url, { content: 'doomed' })
      const bob = editorOn(b)
      await bob.join(session.id)
      assert.equal((await api(a.url, `/api/sessions/${session.id}`, { method: 'DELETE' })).status, 204)
      await eventually(() => bob.received.some(r => r.event === EVENTS.CLOSED))
      assert.equal((await bob.insert(session.id, 0, 'x')).error.code, 'NOT_JOINED')
      assert.equal((await api(b.url, `/api/sessions/${session.id}`)).status, 404)
      assert.equal((await editorOn(b).join(session.id)).error.code, 'NOT_FOUND')
    })

    it('reports Redis in /api/health and every worker in /metrics', async () => {
      const health = (await api(a.url, '/api/health')).body
      assert.equal(health.storage, 'redis')
      assert.equal(health.broadcast, `redis-${redisAdapter}`)
      assert.equal(health.ready, true)
      const metrics = (await api(a.url, '/metrics')).body
      assert.match(metrics, /^tandem_connections\{worker="host-a\/0"\} \d+/m)
      assert.match(metrics, /^tandem_connections\{worker="host-b\/0"\} \d+/m)
    })

    it('refuses a long-polling client with a clear 400 instead of hanging', async () => {
      const res = await fetch(`${a.url}/socket.io/?EIO=4&transport=polling`)
      assert.equal(res.status, 400)
      assert.deepEqual(await res.json(), { code: 0, message: 'Transport unknown' })
    })
  })
}

/**
 * A Redis of the test's own, two servers on it (`host-a`, `host-b`) and an editor on each, joined to
 * one new session; everything is stopped after the test, whether it passed or not.
 * @param {import('node:test').TestContext} t
 * @param {Partial<import('../server/config.js').Config>} [config]
 * @param {Record<string, unknown>} [sessionOptions] fields of the session, e.g. its `content`
 */
async function twoServersOnRedis (t, config = {}, sessionOptions = {}) {
  const defer = deferrals(t)
  const redis = await startRedis()
  defer(() => redis.remove())
  const a = await startServer({ redisUrl: redis.url, nodeName: 'host-a', ...config })
  defer(() => a.close())
  const b = await startServer({ redisUrl: redis.url, nodeName: 'host-b', ...config })
  defer(() => b.close())
  const session = await createSession(a.url, sessionOptions)
  const [alice, bob] = [new TestEditor(a.url), new TestEditor(b.url)]
  defer(() => { alice.close(); bob.close() })
  await alice.join(session.id)
  await bob.join(session.id)
  return { redis, a, b, session, alice, bob }
}

describe('Redis failures', { skip: missing('redis-server') }, () => {
  for (const redisAdapter of /** @type {const} */ (['sharded', 'classic'])) {
    it(`refuses updates with UNAVAILABLE while Redis is down, then resumes and loses nothing acked (${redisAdapter})`, async (t) => {
      await outage(t, redisAdapter)
    })
  }

  /** @param {import('node:test').TestContext} t @param {'sharded' | 'classic'} redisAdapter */
  async function outage (t, redisAdapter) {
    const { redis, a, b, session, alice, bob } = await twoServersOnRedis(t, { redisAdapter })
    const acked = []
    for (let i = 0; i < 10; i++) {
      assert.deepEqual(await alice.insert(session.id, alice.text(session.id).length, `<${i}>`), { ok: true })
      acked.push(`<${i}>`)
    }

    await redis.stop()
    const refused = await alice.edit(session.id, text => text.insert(text.length, '<offline>'))
    assert.equal(refused.error?.code, 'UNAVAILABLE')
    for (const server of [a, b]) {
      const health = await api(server.url, '/api/health')
      assert.equal(health.status, 503)
      assert.equal(health.body.ready, false)
    }
    assert.equal((await api(a.url, '/api/sessions')).status, 503, 'REST refuses with UNAVAILABLE too')
    const carol = new TestEditor(b.url)
    t.after(() => carol.close())
    assert.equal((await carol.join(session.id)).error?.code, 'UNAVAILABLE', 'a join is refused at once, not queued')

    await redis.start()
    await eventually(async () => (await api(a.url, '/api/health')).body.ready && (await api(b.url, '/api/health')).body.ready,
      { what: 'ready after Redis returns' })
    // The refused update left the server's copy with the document reloaded from Redis: its editors
    // were told to rejoin. The client kept the update; rejoining and sending it now lands it.
    assert.ok(alice.received.some(({ event, payload }) => event === EVENTS.CLOSED && payload.reason === 'reload'))
    await eventually(async () => (await alice.join(session.id)).ok, { what: 'rejoined' })
    const missing = Y.encodeStateAsUpdate(alice.ydoc(session.id), Y.encodeStateVector(bob.ydoc(session.id)))
    assert.deepEqual(await alice.request(EVENTS.UPDATE, { doc: session.id, update: missing }), { ok: true })
    await eventually(async () => (await contentOf(b.url, session.id)).endsWith('<offline>'), { what: 'pending edit landed' })
    const text = await contentOf(a.url, session.id)
    assert.deepEqual(acked.filter(token => !text.includes(token)), [])

    // Broadcasts still flow once the adapter's subscriber is back.
    assert.deepEqual(await alice.insert(session.id, 0, '^'), { ok: true })
    await eventually(() => bob.text(session.id).startsWith('^'))
  }

  it('starts without Redis as not ready, and serves once Redis appears, without a restart', async (t) => {
    const defer = deferrals(t)
    const redis = await startRedis()
    defer(() => redis.remove())
    await redis.stop()
    const server = await startServer({ redisUrl: redis.url })
    defer(() => server.close())
    assert.equal((await api(server.url, '/api/health')).status, 503)
    assert.equal((await api(server.url, '/api/sessions', { method: 'POST', body: { name: 'early' } })).status, 503)
    await redis.start()
    await eventually(async () => (await api(server.url, '/api/health')).body.ready, { what: 'ready once Redis is up' })
    const session = await createSession(server.url, { content: 'late but fine' })
    assert.equal(await contentOf(server.url, session.id), 'late but fine')
  })

  it('brings documents and sessions back after a full restart of every server and of Redis', async (t) => {
    const defer = deferrals(t)
    const redis = await startRedis()
    defer(() => redis.remove())
    let server = await startServer({ redisUrl: redis.url })
    defer(() => server.close())
    const session = await createSession(server.url, { name: 'survivor', content: 'start ' })
    const alice = new TestEditor(server.url)
    await alice.join(session.id)
    for (let i = 0; i < 5; i++) await alice.insert(session.id, alice.text(session.id).length, `${i} `)
    const expected = alice.text(session.id)
    alice.close()
    await server.close()
    await redis.stop()

    await redis.start()
    server = await startServer({ redisUrl: redis.url })
    assert.equal((await api(server.url, `/api/sessions/${session.id}`)).body.name, 'survivor')
    assert.equal(await contentOf(server.url, session.id), expected)
  })

  it('compacts a document written by two servers into one snapshot without losing an edit', async (t) => {
    const compactAfterUpdates = 10
    const { a, b, session, alice, bob } = await twoServersOnRedis(t, { compactAfterUpdates })
    // Every write queued on a server so far, and the compaction that may follow it, has run.
    const settled = (/** @type {typeof a} */ server) => /** @type {import('../server/documents/live-doc.js').LiveDoc} */ (server.server.registry.get(session.id)).settled()
    const acks = []
    for (let i = 0; i < 40; i++) {
      acks.push(alice.insert(session.id, 0, 'a'))
      acks.push(bob.insert(session.id, 0, 'b'))
    }
    assert.ok((await Promise.all(acks)).every(reply => reply.ok))
    await eventually(() => alice.text(session.id).length === 80 && bob.text(session.id) === alice.text(session.id))
    // While both raced, a compaction could be skipped for the other server's lock; once both have
    // settled, the next write compacts whatever has piled up, so the log stays within one threshold.
    // A compaction also waits for the log to hold as many bytes as the last snapshot: the write is
    // larger than the whole document, so that whichever server compacted last, it is due.
    await Promise.all([settled(a), settled(b)])
    assert.deepEqual(await alice.insert(session.id, 0, '!'.repeat(1000)), { ok: true })
    await settled(a)
    const stored = await a.server.registry.store.load(session.id)
    assert.ok(stored.updates.length <= compactAfterUpdates + 1, `${stored.updates.length} entries left after compaction`)
    const rebuilt = new Y.Doc()
    for (const update of stored.updates) Y.applyUpdate(rebuilt, update)
    assert.equal(rebuilt.getText(TEXT_NAME).toString(), alice.text(session.id))
  })

  it('applies a write received from another server when an edit builds on it, and keeps it waiting while edits do not', async (t) => {
    const { a, b, session, alice, bob } = await twoServersOnRedis(t, {}, { content: 'base\n' })
    const copyOnA = /** @type {import('../server/documents/live-doc.js').LiveDoc} */ (a.server.registry.get(session.id))
    assert.deepEqual(await bob.insert(session.id, 5, 'from B'), { ok: true })
    await eventually(() => alice.text(session.id) === 'base\nfrom B')
    assert.equal(copyOnA.hasWaiting, true, 'server A relayed the write and holds it to apply later')
    // Before the base text: builds on nothing server B wrote.
    assert.deepEqual(await alice.insert(session.id, 0, '> '), { ok: true })
    assert.equal(copyOnA.hasWaiting, true, 'an edit that does not build on the write leaves it waiting')
    // Right after server B's text: builds on it.
    assert.deepEqual(await alice.insert(session.id, alice.text(session.id).length, '!'), { ok: true })
    assert.equal(copyOnA.hasWaiting, false, 'an edit that builds on the write had it applied first')
    const expected = '> base\nfrom B!'
    await eventually(() => bob.text(session.id) === expected)
    assert.equal(alice.text(session.id), expected)
    for (const server of [a, b]) assert.equal(await contentOf(server.url, session.id), expected)
  })

  it('refuses to start with REDIS_WAITAOF on a Redis older than 7.2', async (t) => {
    const defer = deferrals(t)
    const redis = await startRedis()
    defer(() => redis.remove())
    const version = /redis_version:(\d+)\.(\d+)/.exec(await (await import('node:child_process')).execFileSync('redis-cli', ['-p', String(redis.port), 'info', 'server']).toString())
    if (version && Number(version[1]) * 100 + Number(version[2]) >= 702) {
      const server = await startServer({ redisUrl: redis.url, redisWaitAof: true })
      const session = await createSession(server.url)
      const alice = new TestEditor(server.url)
      await alice.join(session.id)
      assert.deepEqual(await alice.insert(session.id, 0, 'fsynced'), { ok: true })
      alice.close()
      await server.close()
    } else {
      await assert.rejects(startServer({ redisUrl: redis.url, redisWaitAof: true }), /REDIS_WAITAOF=true needs Redis 7\.2 or later/)
    }
  })
})
