import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Redis } from 'ioredis'
import * as Y from 'yjs'
import { CLOSE_REASONS, EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { RedisDocStore } from '../server/storage/redis-doc-store.js'
import { startChildServer } from './helpers/child-server.js'
import { TestEditor } from './helpers/editor.js'
import { openDoc } from './helpers/provider.js'
import { eventually } from './helpers/eventually.js'
import { deferrals, missing } from './helpers/processes.js'
import { guardOf, startRedis } from './helpers/redis.js'
import { api, contentOf, createSession, startServer } from './helpers/server.js'

// Redis failures between processes that share it must never leave an acknowledged edit unread:
// not in what each process serves, not in what a fresh process loads, not at any editor.

/**
 * An editor typing a unique token every `everyMs` until stopped, never sending a refused edit again
 * (as when the tab that typed it closes). When its document is closed for a reload it rejoins,
 * which brings the server's state but not what the editor was refused.
 * @param {TestEditor} editor @param {string} doc @param {string} tag @param {number} everyMs
 */
function typist (editor, doc, tag, everyMs) {
  /** @type {string[]} */
  const acked = []
  const typing = new AbortController()
  let joined = true
  editor.socket.on(EVENTS.CLOSED, ({ reason }) => { if (reason === CLOSE_REASONS.RELOAD) joined = false })
  const done = (async () => {
    // Bounded by `stop()`, which every test calls after a fixed number of seconds.
    for (let i = 0; !typing.signal.aborted; i++) {
      await new Promise(resolve => setTimeout(resolve, everyMs))
      if (!joined) {
        joined = (await editor.join(doc).catch(() => ({ ok: false }))).ok
        continue
      }
      const token = `<${tag}${i}>`
      const reply = await editor.insert(doc, editor.text(doc).length, token).catch(() => null)
      if (reply?.ok) acked.push(token)
      else if (reply?.error?.code === 'NOT_JOINED') joined = false
    }
  })()
  return { acked, stop: async () => { typing.abort(); await done } }
}

const sleep = (/** @type {number} */ ms) => new Promise(resolve => setTimeout(resolve, ms))

/** @param {string} text @param {string[]} tokens */
const absent = (text, tokens) => tokens.filter(token => !text.includes(token))

describe('Redis failures between processes', { skip: missing('redis-server') }, () => {
  for (const redisAdapter of /** @type {const} */ (['sharded', 'classic'])) {
    it(`makes editors on two servers converge without reconnecting when Redis drops their pub/sub connections (${redisAdapter})`, async (t) => {
      const defer = deferrals(t)
      const redis = await startRedis()
      defer(() => redis.remove())
      // Updates as fast as ACKs return; content read often while waiting: no per-connection or REST limit.
      const config = { redisUrl: redis.url, redisAdapter, updatesPerSecond: 0, restPerMinute: 0 }
      const servers = [await startServer(config), await startServer(config)]
      for (const server of servers) defer(() => server.close())
      const session = await createSession(servers[0].url)
      const editors = [0, 1, 0, 1].map(i => new TestEditor(servers[i].url))
      defer(() => editors.forEach(editor => editor.close()))
      let reconnects = 0
      for (const editor of editors) {
        await editor.join(session.id)
        editor.socket.on('disconnect', () => reconnects++)
      }
      const typists = editors.map((editor, i) => typist(editor, session.id, `e${i}.`, 15))

      const admin = redis.client()
      defer(() => admin.quit())
      for (let round = 0; round < 4; round++) {
        await sleep(300)
        await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub')
        const clients = String(await admin.call('CLIENT', 'LIST'))
        for (const line of clients.split('\n').filter(line => line.includes('name=tandem-pub'))) {
          await admin.call('CLIENT', 'KILL', 'ID', /id=(\d+)/.exec(line)?.[1] ?? '0')
        }
      }
      await sleep(300)
      for (const typing of typists) await typing.stop()

      const acked = typists.flatMap(typing => typing.acked)
      assert.ok(acked.length > 100, `${acked.length} edits acknowledged`)
      await eventually(async () => {
        const texts = await Promise.all(servers.map(server => contentOf(server.url, session.id)))
        return texts[0] === texts[1] && absent(texts[0], acked).length === 0 &&
          editors.every(editor => editor.text(session.id) === texts[0])
      }, { timeoutMs: 15000, intervalMs: 100, what: 'every editor holding the servers\' text with every acknowledged edit' }).catch(async (err) => {
        const texts = await Promise.all(servers.map(server => contentOf(server.url, session.id)))
        const differ = editors.filter(editor => editor.text(session.id) !== texts[0]).length
        assert.fail(`${err.message}: the servers lack ${texts.map(text => absent(text, acked).length).join(' and ')} of ` +
          `${acked.length} acknowledged edits; ${differ} of ${editors.length} editors hold other text than the first server`)
      })
      for (const editor of editors) {
        assert.equal(editor.ydoc(session.id).store.pendingStructs, null, 'no editor holds updates it cannot integrate')
      }
      assert.equal(reconnects, 0, 'no editor had to reconnect')
    })
  }

  for (const redisAdapter of /** @type {const} */ (['sharded', 'classic'])) {
    it(`answers joins and keeps running while its Redis publisher cannot reconnect (${redisAdapter})`, async (t) => {
      const defer = deferrals(t)
      const redis = await startRedis()
      defer(() => redis.remove())
      const config = { redisUrl: redis.url, redisAdapter }
      const servers = [await startServer(config), await startServer(config)]
      for (const server of servers) defer(() => server.close())
      const session = await createSession(servers[0].url)

      // The publishers are cut off and cannot come back (Redis refuses every new connection) while
      // each server's other connections stay up, as when Redis restarts and the publisher is the
      // last to reconnect: a join loads the document and subscribes to it, then counts the room's
      // editors, which asks the other server through the publisher. That question must not end the
      // process (sharded adapter) or leave the join unanswered (classic adapter).
      const admin = redis.client()
      defer(async () => {
        await admin.call('CONFIG', 'SET', 'maxclients', '10000')
        await admin.quit()
      })
      const connected = String(await admin.call('CLIENT', 'LIST')).trim().split('\n')
      const publishers = connected.filter(line => line.includes('name=tandem-pub'))
      assert.equal(publishers.length, servers.length)
      await admin.call('CONFIG', 'SET', 'maxclients', String(connected.length - publishers.length))
      for (const line of publishers) await admin.call('CLIENT', 'KILL', 'ID', /id=(\d+)/.exec(line)?.[1] ?? '0')
      await eventually(async () => {
        const health = await Promise.all(servers.map(server => api(server.url, '/api/health')))
        return health.every(res => res.status === 503)
      }, { what: 'both servers reporting that Redis is not ready' })

      const editors = [0, 1].map(i => new TestEditor(servers[i].url))
      defer(() => editors.forEach(editor => editor.close()))
      for (const editor of editors) {
        const reply = await editor.join(session.id)
        assert.equal(reply.ok, true, JSON.stringify(reply))
      }
      assert.deepEqual(await editors[0].insert(session.id, 0, 'still here'), { ok: true })
      for (const server of servers) assert.equal(await contentOf(server.url, session.id), 'still here')
    })
  }

  it('loses no acknowledged edit when Redis is killed and restarted on its append-only file while editors on two processes type', async (t) => {
    const defer = deferrals(t)
    // Redis acknowledges a write once it is in its append-only file on disk.
    const redis = await startRedis({ args: ['--appendfsync', 'always'] })
    defer(() => redis.remove())
    // Three runs: the moment of the crash falls at a different point of the writes each time.
    for (let run = 0; run < 3; run++) {
      const env = { REDIS_URL: redis.url, UPDATES_PER_SECOND: '0', REST_PER_MINUTE: '0' }
      const servers = [await startChildServer(env), await startChildServer(env)]
      const session = await createSession(servers[0].url)
      const editors = [0, 1, 0, 1, 0, 1].map(i => new TestEditor(servers[i].url))
      for (const editor of editors) await editor.join(session.id)
      const typists = editors.map((editor, i) => typist(editor, session.id, `r${run}e${i}.`, 20))
      const ackedSoFar = () => typists.reduce((sum, typing) => sum + typing.acked.length, 0)

      // Counted, not timed, so that a busy machine still crashes Redis amid enough writes; a later
      // run crashes it later in the writes.
      await eventually(() => ackedSoFar() > 50 + 30 * run, { timeoutMs: 15000, what: `run ${run}: edits acknowledged before the crash` })
      await redis.stop('SIGKILL')
      await sleep(1500)
      await redis.start()
      await sleep(1500)
      for (const typing of typists) await typing.stop()
      for (const server of servers) {
        assert.equal(server.child.exitCode, null, `run ${run}: a process exited while Redis restarted: ${server.output.stderr}`)
      }
      const acked = typists.flatMap(typing => typing.acked)

      await eventually(async () => {
        const texts = await Promise.all(servers.map(server => contentOf(server.url, session.id)))
        return texts.every(text => absent(text, acked).length === 0)
      }, { timeoutMs: 15000, intervalMs: 100, what: 'every acknowledged edit in what both processes serve' }).catch(async (err) => {
        const texts = await Promise.all(servers.map(server => contentOf(server.url, session.id)))
        assert.fail(`run ${run}: ${err.message}: the processes lack ${texts.map(text => absent(text, acked).length).join(' and ')} of ${acked.length} acknowledged edits`)
      })
      for (const editor of editors) editor.close()
      for (const server of servers) await server.stop('SIGKILL')

      const fresh = await startChildServer(env)
      const text = await contentOf(fresh.url, session.id)
      const lost = absent(text, acked)
      assert.deepEqual(lost, [], `run ${run}: ${lost.length} of ${acked.length} acknowledged edits not readable by a fresh process`)
      await fresh.stop('SIGKILL')
    }
  })

  it('writes back from memory what Redis lost when it restarts on an older dump, so a fresh process reads every acknowledged edit', async (t) => {
    const defer = deferrals(t)
    // Snapshots only (RDB): a restart after a crash loads the last SAVE, older than what was acknowledged.
    const redis = await startRedis({ args: ['--appendonly', 'no'] })
    defer(() => redis.remove())
    // No compaction, which would otherwise write the lost window back by chance.
    const env = { REDIS_URL: redis.url, UPDATES_PER_SECOND: '0', REST_PER_MINUTE: '0', COMPACT_AFTER_UPDATES: '100000', HISTORY_RETENTION: '1d' }
    const servers = [await startChildServer(env), await startChildServer(env)]
    const session = await createSession(servers[0].url)
    const editors = [0, 1, 0, 1].map(i => new TestEditor(servers[i].url))
    for (const editor of editors) await editor.join(session.id)
    const client = redis.client()
    defer(() => client.quit())
    await client.call('SAVE')
    /** @param {string} round */
    const typeFor = async (round) => {
      const typists = editors.map((editor, i) => typist(editor, session.id, `${round}${i}.`, 20))
      const ackedSoFar = () => typists.reduce((sum, typing) => sum + typing.acked.length, 0)
      await eventually(() => ackedSoFar() > 60, { timeoutMs: 15000, what: `edits acknowledged (${round})` })
      for (const typing of typists) await typing.stop()
      return typists.flatMap(typing => typing.acked)
    }
    // Typed after the SAVE, while the editors then pause, Redis crashes and comes back on the dump.
    const beforeCrash = await typeFor('before')
    await redis.stop('SIGKILL')
    await redis.start()
    await eventually(async () => (await api(servers[0].url, '/api/health')).status === 200 && (await api(servers[1].url, '/api/health')).status === 200,
      { timeoutMs: 15000, what: 'both processes connected again' })
    const acked = [...beforeCrash, ...await typeFor('after')]
    for (const editor of editors) editor.close()
    for (const server of servers) await server.stop('SIGKILL')

    const fresh = await startChildServer(env)
    defer(() => fresh.stop('SIGKILL'))
    const text = await contentOf(fresh.url, session.id)
    const lost = absent(text, acked)
    assert.deepEqual(lost, [], `${lost.length} of ${acked.length} acknowledged edits not readable by a fresh process`)
    // History lost the same window, and holds the write-back too.
    const now = await api(fresh.url, `/api/sessions/${session.id}/content?at=${new Date().toISOString()}`)
    const lostInHistory = absent(String(now.body), acked)
    assert.deepEqual(lostInHistory, [], `${lostInHistory.length} of ${acked.length} acknowledged edits not in history's text of now`)
  })

  it('brings a stored write whose feed message never came to the editors of a process within its sweep, and reads only the logs that moved', async (t) => {
    const defer = deferrals(t)
    const redis = await startRedis()
    defer(() => redis.remove())
    const server = await startServer({ redisUrl: redis.url })
    defer(() => server.close())
    const [moved, still] = [await createSession(server.url, { content: 'base\n' }), await createSession(server.url, { content: 'base\n' })]
    const alice = new TestEditor(server.url)
    defer(() => alice.close())
    await alice.join(moved.id)
    await alice.join(still.id)
    assert.deepEqual(await alice.insert(still.id, 0, 'x'), { ok: true })
    // Another process's write, stored but never published: a store with no feed writes the log only.
    const client = new Redis(redis.port, '127.0.0.1')
    defer(() => client.disconnect())
    const silent = new RedisDocStore(client, { guard: guardOf(client), waitAof: false, appendSpacingMs: 0 })
    const elsewhere = new Y.Doc()
    for (const update of (await silent.load(moved.id)).updates) Y.applyUpdate(elsewhere, update)
    const before = Y.encodeStateVector(elsewhere)
    elsewhere.getText(TEXT_NAME).insert(5, 'unannounced')
    await silent.append(moved.id, [Y.encodeStateAsUpdate(elsewhere, before)])
    const store = server.server.registry.store
    const readSince = store.readSince.bind(store)
    /** @type {string[]} */
    const read = []
    store.readSince = (docId, position) => {
      read.push(docId)
      return readSince(docId, position)
    }
    await eventually(() => alice.text(moved.id) === 'base\nunannounced', { timeoutMs: 12000, what: 'the unannounced write at the editor' })
    assert.deepEqual(read, [moved.id], 'only the log that moved was read')
  })

  it('frees the seats of a process killed with SIGKILL once its lease ends, and those of a stopped one at once', async (t) => {
    const defer = deferrals(t)
    const redis = await startRedis()
    defer(() => redis.remove())
    const survivor = await startServer({ redisUrl: redis.url })
    defer(() => survivor.close())
    const session = await createSession(survivor.url, { maxEditors: 2 })
    const rejoining = new TestEditor(survivor.url)
    defer(() => rejoining.close())

    const killed = await startChildServer({ REDIS_URL: redis.url, SEAT_LEASE_MS: '1500' })
    const seated = [new TestEditor(killed.url), new TestEditor(killed.url)]
    for (const editor of seated) assert.equal((await editor.join(session.id)).ok, true)
    await killed.stop('SIGKILL')
    seated.forEach(editor => editor.close())
    assert.equal((await rejoining.join(session.id)).error?.code, 'ROOM_FULL', 'a killed process holds its seats until its lease ends')
    await eventually(async () => (await rejoining.join(session.id)).ok === true, { timeoutMs: 10000, intervalMs: 100, what: 'a seat freed by the lease' })

    // A lease far longer than the test: only the stopping process itself can free its seat.
    const stopped = await startChildServer({ REDIS_URL: redis.url, SEAT_LEASE_MS: '600000' })
    const leaving = new TestEditor(stopped.url)
    defer(() => leaving.close())
    assert.equal((await leaving.join(session.id)).ok, true)
    const refused = new TestEditor(survivor.url)
    defer(() => refused.close())
    assert.equal((await refused.join(session.id)).error?.code, 'ROOM_FULL')
    assert.equal((await stopped.stop('SIGTERM')).code, 0)
    const next = new TestEditor(survivor.url)
    defer(() => next.close())
    assert.equal((await next.join(session.id)).ok, true, 'a stopped process gives its seats back')
  })

  it('heals every provider by itself after Redis stops for seconds while they type on two processes', async (t) => {
    const defer = deferrals(t)
    const redis = await startRedis()
    defer(() => redis.remove())
    // The test reads each server's content often while waiting: no REST rate limit.
    const servers = [await startServer({ redisUrl: redis.url, restPerMinute: 0 }), await startServer({ redisUrl: redis.url, restPerMinute: 0 })]
    for (const server of servers) defer(() => server.close())
    const session = await createSession(servers[0].url)
    const docs = Array.from({ length: 8 }, (_, i) => openDoc(servers[i % 2].url, session.id, { retryDelayMs: 100, maxRetryDelayMs: 1000 }))
    defer(() => docs.forEach(doc => doc.destroy()))
    await eventually(async () => docs.every(doc => doc.settled()), { what: 'providers joined' })

    const typing = new AbortController()
    const typed = (async () => {
      // Bounded: stops when `typing` is aborted below, after a fixed time.
      for (let i = 0; !typing.signal.aborted; i++) {
        docs[i % docs.length].append(`<p${i % docs.length}.${i}>`)
        await sleep(25)
      }
    })()
    await sleep(800)
    await redis.stop('SIGKILL')
    await sleep(3000)
    await redis.start()
    await sleep(1000)
    typing.abort()
    await typed

    await eventually(async () => {
      const texts = await Promise.all(servers.map(server => contentOf(server.url, session.id)))
      return texts[0] === texts[1] && docs.every(doc => doc.settled() && doc.provider.synced && doc.text() === texts[0])
    }, { timeoutMs: 30000, what: 'every provider holding the servers\' exact text' })
    for (const doc of docs) {
      assert.equal(doc.ydoc.store.pendingStructs, null)
      assert.equal(doc.ydoc.store.pendingDs, null)
    }
  })
})
