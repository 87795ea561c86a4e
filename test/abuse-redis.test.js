import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import * as Y from 'yjs'
import { EVENTS } from '../isomorphic/events.js'
import { TestEditor } from './helpers/editor.js'
import { missing } from './helpers/processes.js'
import { startRedis } from './helpers/redis.js'
import { api, createSession, startServer } from './helpers/server.js'

// What a client's timing can do to what Redis holds: a delete racing a compaction, and an update
// whose sender leaves before it is stored.

describe('abusive timing against a server on Redis', { skip: missing('redis-server'), timeout: 60000 }, () => {
  /** @type {Awaited<ReturnType<typeof startRedis>>} */
  let redis
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {Redis} */
  let client
  /** @type {TestEditor[]} */
  const editors = []

  before(async () => {
    redis = await startRedis()
    tandem = await startServer({ redisUrl: redis.url, connectionsPerMinute: 0, joinsPerMinute: 0 })
    client = new Redis(redis.url)
  })
  after(async () => {
    for (const editor of editors) editor.close()
    client?.disconnect()
    await tandem?.close()
    await redis?.remove()
  })

  const editor = () => {
    const made = new TestEditor(tandem.url)
    editors.push(made)
    return made
  }

  it('does not write a deleted session back as a snapshot when a compaction races the delete', async () => {
    const { id } = await createSession(tandem.url, { content: 'secret' })
    const alice = editor()
    await alice.join(id)
    for (let i = 0; i < 5; i++) assert.deepEqual(await alice.insert(id, 0, `${i}`), { ok: true })
    const doc = /** @type {import('../server/documents/live-doc.js').LiveDoc} */ (tandem.server.registry.get(id))
    const snapshot = Y.encodeStateAsUpdate(doc.ydoc)
    const position = doc.position
    // A worker that still holds the document compacts it; the session is deleted while it builds
    // the snapshot.
    const compacted = await tandem.server.backend.docStore.compact(id, async () => {
      assert.equal((await api(tandem.url, `/api/sessions/${id}`, { method: 'DELETE' })).status, 204)
      return { snapshot, position }
    })
    assert.equal(compacted, false)
    assert.deepEqual(await client.keys(`tandem:{doc:${id}}:*`), [`tandem:{doc:${id}}:deleted`], 'only the tombstone is left')
  })

  it('acknowledges an update sent just before doc:leave as stored', async () => {
    const { id } = await createSession(tandem.url)
    const alice = editor()
    await alice.join(id)
    const ydoc = new Y.Doc()
    ydoc.getText('content').insert(0, 'last words')
    const acked = alice.request(EVENTS.UPDATE, { doc: id, update: Y.encodeStateAsUpdate(ydoc) })
    const left = alice.request(EVENTS.LEAVE, { doc: id })
    assert.deepEqual(await acked, { ok: true })
    assert.deepEqual(await left, { ok: true })
    assert.equal((await api(tandem.url, `/api/sessions/${id}/content`)).body, 'last words')
  })
})
