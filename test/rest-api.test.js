import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as Y from 'yjs'
import { TEXT_NAME } from '../isomorphic/events.js'
import { missing } from './helpers/processes.js'
import { startRedis } from './helpers/redis.js'
import { api, createSession, startServer, tempDataDir } from './helpers/server.js'

describe('REST session API', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let data

  before(async () => {
    data = await tempDataDir()
    tandem = await startServer({ dataDir: data.dir, maxBodyBytes: 4096, defaultMaxEditors: 7 })
  })
  after(async () => {
    await tandem.close()
    await data.remove()
  })

  it('creates a session with defaults and returns it with a Location', async () => {
    const res = await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'Interview #1' } })
    assert.equal(res.status, 201)
    assert.equal(res.headers.get('location'), `/api/sessions/${res.body.id}`)
    assert.deepEqual(Object.keys(res.body), ['id', 'name', 'language', 'maxEditors', 'editors', 'createdAt', 'updatedAt', 'webhook'])
    assert.match(res.body.id, /^[a-z0-9]{22}$/)
    assert.equal(res.body.name, 'Interview #1')
    assert.equal(res.body.language, 'plaintext')
    assert.equal(res.body.maxEditors, 7)
    assert.equal(res.body.editors, 0)
    assert.equal(res.body.createdAt, res.body.updatedAt)
    assert.deepEqual((await api(tandem.url, `/api/sessions/${res.body.id}`)).body, res.body)
  })

  it('infers a session\'s language from its file name when none is given, and lets it be changed', async () => {
    const named = async (/** @type {string} */ name) => (await api(tandem.url, '/api/sessions', { method: 'POST', body: { name } })).body
    assert.equal((await named('main.rs')).language, 'rust')
    assert.equal((await named('src/App.TSX')).language, 'tsx')
    assert.equal((await named('notes')).language, 'plaintext')
    const session = await named('script.py')
    assert.equal(session.language, 'python')
    const changed = await api(tandem.url, `/api/sessions/${session.id}`, { method: 'PATCH', body: { language: 'markdown' } })
    assert.equal(changed.body.language, 'markdown')
    const explicit = await createSession(tandem.url, { name: 'main.rs', language: 'go' })
    assert.equal(explicit.language, 'go', 'a given language wins over the name')
  })

  it('seeds the document from `content` and serves it as text and as a Yjs update', async () => {
    const content = 'fn main() {\n    println!("hi");\n}\n'
    const session = await createSession(tandem.url, { language: 'rust', content })
    const text = await api(tandem.url, `/api/sessions/${session.id}/content`)
    assert.equal(text.status, 200)
    assert.match(text.headers.get('content-type') ?? '', /^text\/plain/)
    assert.equal(text.body, content)
    const state = await api(tandem.url, `/api/sessions/${session.id}/content?format=yjs`)
    assert.match(state.headers.get('content-type') ?? '', /^application\/octet-stream/)
    const ydoc = new Y.Doc()
    Y.applyUpdate(ydoc, state.body)
    assert.equal(ydoc.getText(TEXT_NAME).toString(), content)
  })

  it('lists sessions newest first, page by page through the cursor', async () => {
    const ids = []
    for (let i = 0; i < 5; i++) ids.push((await createSession(tandem.url, { name: `page-${i}` })).id)
    const seen = []
    let cursor = ''
    do {
      const res = await api(tandem.url, `/api/sessions?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      assert.equal(res.status, 200)
      assert.ok(res.body.sessions.length <= 2)
      seen.push(...res.body.sessions.map((/** @type {any} */ s) => s.id))
      cursor = res.body.nextCursor
    } while (cursor)
    assert.deepEqual(seen.slice(0, 5), [...ids].reverse())
    assert.equal(new Set(seen).size, seen.length, 'no session listed twice')
  })

  it('updates name, language and maxEditors, and nothing else', async () => {
    const session = await createSession(tandem.url)
    const res = await api(tandem.url, `/api/sessions/${session.id}`, { method: 'PATCH', body: { name: 'renamed', language: 'typescript', maxEditors: 3 } })
    assert.equal(res.status, 200)
    assert.equal(res.body.name, 'renamed')
    assert.equal(res.body.language, 'typescript')
    assert.equal(res.body.maxEditors, 3)
    assert.equal(res.body.createdAt, session.createdAt)
    assert.ok(res.body.updatedAt >= session.updatedAt)
    const refused = await api(tandem.url, `/api/sessions/${session.id}`, { method: 'PATCH', body: { id: 'other' } })
    assert.equal(refused.status, 400)
    assert.deepEqual((await api(tandem.url, `/api/sessions/${session.id}`)).body, res.body)
  })

  it('deletes a session and its document', async () => {
    const session = await createSession(tandem.url, { content: 'gone' })
    assert.equal((await api(tandem.url, `/api/sessions/${session.id}`, { method: 'DELETE' })).status, 204)
    for (const path of [`/api/sessions/${session.id}`, `/api/sessions/${session.id}/content`]) {
      const res = await api(tandem.url, path)
      assert.equal(res.status, 404)
      assert.equal(res.body.error.code, 'NOT_FOUND')
    }
    assert.equal((await api(tandem.url, `/api/sessions/${session.id}`, { method: 'DELETE' })).status, 404)
    assert.deepEqual((await tandem.server.registry.store.load(session.id)).updates, [], 'nothing of the document is left in storage')
  })

  it('answers 400 with field details for invalid or unknown fields, and creates nothing', async () => {
    const before = (await api(tandem.url, '/api/sessions?limit=100')).body.sessions.length
    const cases = [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 42 }, 'name'],
      [{ name: 'x', language: 'Not A Language!' }, 'language'],
      [{ name: 'x', maxEditors: 0 }, 'maxEditors'],
      [{ name: 'x', maxEditors: 2.5 }, 'maxEditors'],
      [{ name: 'x', content: 7 }, 'content'],
      [{ name: 'x', owner: 'mallory' }, 'owner']
    ]
    for (const [body, field] of cases) {
      const res = await api(tandem.url, '/api/sessions', { method: 'POST', body })
      assert.equal(res.status, 400, JSON.stringify(body))
      assert.equal(res.body.error.code, 'BAD_REQUEST')
      assert.ok(res.body.error.details.some((/** @type {any} */ d) => d.field === field), `${JSON.stringify(body)} names ${field}`)
    }
    assert.equal((await api(tandem.url, '/api/sessions?limit=100')).body.sessions.length, before)
  })

  it('refuses malformed JSON with 400, an oversized body with 413, and bad queries with 400', async () => {
    const malformed = await api(tandem.url, '/api/sessions', { method: 'POST', raw: '{"name": ' })
    assert.equal(malformed.status, 400)
    assert.equal(malformed.body.error.code, 'BAD_REQUEST')
    const oversized = await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'big', content: 'x'.repeat(8000) } })
    assert.equal(oversized.status, 413)
    assert.equal(oversized.body.error.code, 'TOO_LARGE')
    for (const query of ['limit=0', 'limit=1000', 'limit=abc', 'cursor=%24%24', 'sort=name']) {
      const res = await api(tandem.url, `/api/sessions?${query}`)
      assert.equal(res.status, 400, query)
    }
    const format = await api(tandem.url, `/api/sessions/${(await createSession(tandem.url)).id}/content?format=pdf`)
    assert.equal(format.status, 400)
  })

  it('answers unknown sessions and routes with a JSON 404 and never a stack trace', async () => {
    for (const path of ['/api/sessions/nosuchsession', '/api/sessions/Bad..Id', '/api/nothing-here']) {
      const res = await api(tandem.url, path)
      assert.equal(res.status, 404, path)
      assert.equal(res.body.error.code, 'NOT_FOUND')
      assert.doesNotMatch(JSON.stringify(res.body), /at .*\.js/)
    }
  })

  it('reports health: version, uptime, storage, broadcast and readiness', async () => {
    const res = await api(tandem.url, '/api/health')
    assert.equal(res.status, 200)
    assert.equal(res.body.status, 'ok')
    assert.equal(res.body.ready, true)
    assert.equal(res.body.storage, 'leveldb')
    assert.equal(res.body.broadcast, 'memory')
    assert.match(res.body.version, /^\d+\.\d+\.\d+/)
    assert.equal(typeof res.body.uptime, 'number')
  })

  it('serves Prometheus metrics, counting refusals by code', async () => {
    await api(tandem.url, '/api/sessions/nosuchsession')
    const res = await api(tandem.url, '/metrics')
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/)
    assert.match(res.body, /^tandem_refusals_total\{code="NOT_FOUND",event="http",worker="[^"]+"\} [1-9]/m)
    assert.match(res.body, /^# TYPE tandem_update_duration_seconds histogram/m)
  })
})

for (const storage of ['embedded', 'redis']) {
  describe(`a session deletion that fails halfway (${storage})`, { skip: storage === 'redis' && missing('redis-server') }, () => {
    it('answers 503, and a retry deletes the document and then the session', async (t) => {
      const redis = storage === 'redis' ? await startRedis() : undefined
      t.after(() => redis?.remove())
      const tandem = await startServer(redis ? { redisUrl: redis.url } : {})
      t.after(() => tandem.close())
      const session = await createSession(tandem.url, { content: 'secret' })
      const { docStore } = tandem.server.backend
      const remove = docStore.delete.bind(docStore)
      let failures = 1
      docStore.delete = async (/** @type {string} */ docId) => {
        if (failures-- > 0) throw new Error('storage refused the write')
        return remove(docId)
      }
      const path = `/api/sessions/${session.id}`
      assert.equal((await api(tandem.url, path, { method: 'DELETE' })).status, 503)
      assert.equal((await api(tandem.url, path, { method: 'DELETE' })).status, 204, 'the retry finds the session and finishes')
      assert.equal((await api(tandem.url, path)).status, 404)
      assert.deepEqual((await docStore.load(session.id)).updates, [], 'nothing of the document is stored')
      if (redis) {
        const client = redis.client()
        t.after(() => client.quit())
        assert.deepEqual(await client.keys(`tandem:{doc:${session.id}}:*`), [`tandem:{doc:${session.id}}:deleted`], 'only the tombstone is left')
      }
    })
  })
}

describe('deleted sessions remembered', () => {
  it('refuses to load a document deleted within the hour, and forgets it after', async (t) => {
    const tandem = await startServer()
    t.after(() => tandem.close())
    const { registry } = tandem.server
    const [first, second] = [await createSession(tandem.url), await createSession(tandem.url)]
    assert.equal((await api(tandem.url, `/api/sessions/${first.id}`, { method: 'DELETE' })).status, 204)
    await assert.rejects(registry.open(first.id), { code: 'NOT_FOUND' })
    t.mock.timers.enable({ apis: ['Date'], now: Date.now() + 61 * 60 * 1000 })
    assert.equal((await api(tandem.url, `/api/sessions/${second.id}`, { method: 'DELETE' })).status, 204)
    await assert.rejects(registry.open(second.id), { code: 'NOT_FOUND' })
    // An hour on, the first is forgotten here (no session leads to it any more): it opens empty.
    const reopened = await registry.open(first.id)
    assert.equal(reopened.ydoc.getText(TEXT_NAME).length, 0)
    registry.release(reopened)
  })
})
