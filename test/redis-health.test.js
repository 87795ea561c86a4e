import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import pino from 'pino'
import { RedisDocFeed } from '../server/storage/redis-doc-feed.js'
import { connectRedis } from '../server/storage/redis.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { deferrals, freePort, missing } from './helpers/processes.js'
import { startRedis } from './helpers/redis.js'
import { api, createSession, startServer } from './helpers/server.js'

// A Redis that is connected but refuses every write (a replica, past maxmemory) must make the
// process say so: /api/health degraded with Redis's code, one log line per interval however many
// updates and joins it refuses, and ok again once Redis takes writes, with nobody writing.

/** A logger that keeps every line, and the server started with it. @param {string} redisUrl */
async function serverLogging (redisUrl) {
  /** @type {{ level: number, msg: string, code?: string }[]} */
  const lines = []
  const logger = pino({ level: 'debug' }, { write (/** @type {string} */ line) { lines.push(JSON.parse(line)) } })
  const server = await startServer({ redisUrl, updatesPerSecond: 0, restPerMinute: 0 }, { logger })
  return { ...server, lines, errorLines: () => lines.filter(line => line.level >= 50) }
}

/**
 * A Redis, a server on it that keeps its log lines, and a client of the test's own for Redis
 * commands; all closed at the end of the test.
 * @param {import('node:test').TestContext} t
 */
async function serverOnRedis (t) {
  const defer = deferrals(t)
  const redis = await startRedis()
  defer(() => redis.remove())
  const server = await serverLogging(redis.url)
  defer(() => server.close())
  const admin = redis.client()
  defer(() => admin.quit())
  return { server, admin, defer }
}

/** @param {string} url */
async function health (url) {
  const { status, body } = await api(url, '/api/health')
  return { status, state: body.status, storageError: body.storageError }
}

describe('health while Redis refuses writes', { skip: missing('redis-server') }, () => {
  it('answers 503 degraded with READONLY while Redis is a replica, logs the code once, and is ok again once Redis takes writes', async (t) => {
    const { server, admin, defer } = await serverOnRedis(t)
    const [session, other] = [await createSession(server.url), await createSession(server.url)]
    const alice = new TestEditor(server.url)
    defer(() => alice.close())
    assert.equal((await alice.join(session.id)).ok, true)
    assert.deepEqual(await alice.insert(session.id, 0, 'a'), { ok: true })

    await admin.call('REPLICAOF', '127.0.0.1', String(await freePort()))
    const refused = await alice.insert(session.id, 1, 'b')
    assert.equal(refused.ok, false)
    assert.equal(refused.error.code, 'UNAVAILABLE')
    // Joins take a seat, a write: refused too, and no more lines for them.
    for (let i = 0; i < 5; i++) assert.equal((await alice.joinOutcome(other.id)).code, 'UNAVAILABLE')
    assert.deepEqual(await health(server.url), { status: 503, state: 'degraded', storageError: 'READONLY' })
    assert.deepEqual(server.errorLines().map(({ msg, code }) => ({ msg, code })), [{ msg: 'storage refuses writes', code: 'READONLY' }])

    await admin.call('REPLICAOF', 'NO', 'ONE')
    await eventually(async () => (await health(server.url)).status === 200, { what: 'healthy once Redis takes writes, with no edit sent' })
    assert.deepEqual(await health(server.url), { status: 200, state: 'ok', storageError: undefined })
    assert.ok(server.lines.some(line => line.msg === 'storage takes writes again' && line.code === 'READONLY'))
    assert.equal((await alice.join(other.id)).ok, true)
    assert.deepEqual(await alice.insert(other.id, 0, 'c'), { ok: true })
  })

  it('answers 503 degraded with OOM past maxmemory, with one error line however many loads and writes Redis refuses', async (t) => {
    const { server, admin, defer } = await serverOnRedis(t)
    const session = await createSession(server.url)
    const unloaded = [await createSession(server.url), await createSession(server.url), await createSession(server.url)]
    const alice = new TestEditor(server.url)
    defer(() => alice.close())
    assert.equal((await alice.join(session.id)).ok, true)
    assert.deepEqual(await alice.insert(session.id, 0, 'a'), { ok: true })

    await admin.config('SET', 'maxmemory-policy', 'noeviction')
    await admin.config('SET', 'maxmemory', '1')
    defer(() => admin.config('SET', 'maxmemory', '0'))
    assert.equal((await alice.insert(session.id, 1, 'b')).ok, false)
    // Past maxmemory Redis refuses even a transaction of reads: every load fails.
    for (let round = 0; round < 4; round++) {
      for (const { id } of unloaded) assert.equal((await alice.joinOutcome(id)).code, 'UNAVAILABLE')
    }
    assert.deepEqual(await health(server.url), { status: 503, state: 'degraded', storageError: 'OOM' })
    assert.deepEqual(server.errorLines().map(({ msg, code }) => ({ msg, code })), [{ msg: 'storage refuses writes', code: 'OOM' }])

    await admin.config('SET', 'maxmemory', '0')
    await eventually(async () => (await health(server.url)).status === 200, { what: 'healthy once Redis has memory again' })
    assert.equal((await alice.join(unloaded[0].id)).ok, true)
    assert.deepEqual(await alice.insert(unloaded[0].id, 0, 'c'), { ok: true })
  })

  it('answers 503 degraded with ETIMEDOUT while Redis holds every write unanswered, and is ok again after', async (t) => {
    const { server, admin, defer } = await serverOnRedis(t)
    const session = await createSession(server.url)
    const alice = new TestEditor(server.url)
    defer(() => alice.close())
    assert.equal((await alice.join(session.id)).ok, true)

    await admin.call('CLIENT', 'PAUSE', '7000', 'WRITE')
    // Its ACK comes no sooner than the command timeout, as long as the editor waits for one.
    const stalled = alice.insert(session.id, 0, 'a').catch(() => null)
    await eventually(async () => (await health(server.url)).storageError === 'ETIMEDOUT', { timeoutMs: 8000, what: 'degraded by a write unanswered' })
    assert.deepEqual(await health(server.url), { status: 503, state: 'degraded', storageError: 'ETIMEDOUT' })
    assert.deepEqual(server.errorLines().map(({ msg, code }) => ({ msg, code })), [{ msg: 'storage refuses writes', code: 'ETIMEDOUT' }])
    await stalled
    await eventually(async () => (await health(server.url)).status === 200, { what: 'healthy once the pause ends' })
  })
})

describe('a subscription to a document\'s feed', { skip: missing('redis-server') }, () => {
  it('is refused UNAVAILABLE within its bound while Redis does not answer, and taken once Redis answers again', async (t) => {
    const defer = deferrals(t)
    const redis = await startRedis()
    defer(() => redis.remove())
    const logger = pino({ level: 'silent' })
    const config = { redisUrl: redis.url, redisClusterNodes: [] }
    // The connections Tandem makes: the subscriber queues its commands until Redis answers.
    const [publisher, subscriber] = [await connectRedis(config, 'pub', logger), await connectRedis(config, 'sub', logger, { subscriber: true })]
    defer(() => { publisher.disconnect(); subscriber.disconnect() })
    const feed = new RedisDocFeed({ publisher, subscriber, sharded: false, oneChannel: true, logger, subscribeTimeoutMs: 300 })

    const admin = redis.client()
    defer(() => admin.quit())
    // The connection stays up and answers nothing, as during a drop not yet noticed.
    await admin.call('CLIENT', 'PAUSE', '2500', 'ALL')
    const started = performance.now()
    await assert.rejects(feed.subscribe('paused-doc'), { code: 'UNAVAILABLE' })
    assert.ok(performance.now() - started < 1500, `refused after ${Math.round(performance.now() - started)} ms`)

    // A later join subscribes again, and gets through once Redis answers.
    await eventually(() => feed.subscribe('paused-doc').then(() => true, () => false), { what: 'subscribed after the pause' })
    const channels = /** @type {string[]} */ (await admin.call('PUBSUB', 'CHANNELS'))
    assert.deepEqual(channels.sort(), [feed.allWritesChannel, feed.channelOf('paused-doc')].sort())
  })
})
