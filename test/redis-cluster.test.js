import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { EVENTS } from '../isomorphic/events.js'
import { editorPool } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { missing } from './helpers/processes.js'
import { startRedisCluster } from './helpers/redis-cluster.js'
import { api, contentOf, createSession, startServer } from './helpers/server.js'

// The same code on a real 3-master Redis Cluster: ioredis's Cluster client, the sharded adapter, and
// keys hash-tagged per document so each document's MULTI blocks and scripts stay in one slot.

describe('two servers on a 3-master Redis Cluster', { skip: missing('redis-server') }, () => {
  /** @type {Awaited<ReturnType<typeof startRedisCluster>>} */
  let cluster
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let a
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let b
  const pool = editorPool()
  const editorOn = pool.on

  before(async () => {
    cluster = await startRedisCluster()
    a = await startServer({ redisUrl: cluster.url, nodeName: 'host-a', compactAfterUpdates: 10 })
    b = await startServer({ redisClusterNodes: cluster.nodes, nodeName: 'host-b', compactAfterUpdates: 10 })
  })
  after(async () => {
    pool.closeAll()
    await a?.close()
    await b?.close()
    await cluster?.remove()
  })

  it('stores sessions and documents across the shards and syncs editors on both servers', async () => {
    const sessions = []
    for (let i = 0; i < 6; i++) sessions.push(await createSession(a.url, { name: `file-${i}`, content: `// ${i}\n` }))
    const slots = new Set(await Promise.all(sessions.map(s => cluster.slotOf(`tandem:{doc:${s.id}}:log`))))
    assert.ok(slots.size > 1, 'documents spread over several slots')
    for (const session of sessions) {
      const [alice, bob] = [editorOn(a), editorOn(b)]
      await alice.join(session.id)
      await bob.join(session.id)
      for (let i = 0; i < 15; i++) assert.deepEqual(await alice.insert(session.id, 0, 'x'), { ok: true })
      await eventually(() => bob.text(session.id) === alice.text(session.id) && bob.text(session.id).startsWith('x'.repeat(15)))
      assert.equal(await contentOf(b.url, session.id), alice.text(session.id))
    }
    const listed = (await api(b.url, '/api/sessions?limit=100')).body.sessions.map((/** @type {any} */ s) => s.id)
    for (const session of sessions) assert.ok(listed.includes(session.id))
  })

  it('compacts under the per-document lock and closes deleted sessions on both servers', async () => {
    const session = await createSession(b.url)
    const [alice, bob] = [editorOn(a), editorOn(b)]
    await alice.join(session.id)
    await bob.join(session.id)
    for (let i = 0; i < 30; i++) await (i % 2 ? alice : bob).insert(session.id, 0, String(i % 10))
    await eventually(() => alice.text(session.id).length === 30 && alice.text(session.id) === bob.text(session.id))
    const stored = await a.server.registry.store.load(session.id)
    assert.ok(stored.updates.length < 20, `${stored.updates.length} entries after compaction`)
    assert.equal((await api(a.url, `/api/sessions/${session.id}`, { method: 'DELETE' })).status, 204)
    await eventually(() => bob.received.some(r => r.event === EVENTS.CLOSED))
    assert.equal((await api(b.url, `/api/sessions/${session.id}`)).status, 404)
  })

  it('reports both workers in /metrics', async () => {
    const metrics = (await api(b.url, '/metrics')).body
    assert.match(metrics, /worker="host-a\/0"/)
    assert.match(metrics, /worker="host-b\/0"/)
  })
})
