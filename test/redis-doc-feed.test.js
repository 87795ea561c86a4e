import assert from 'node:assert/strict'
import { once } from 'node:events'
import { after, before, describe, it } from 'node:test'
import { Redis } from 'ioredis'
import pino from 'pino'
import { RedisDocFeed } from '../server/storage/redis-doc-feed.js'
import { RedisDocStore } from '../server/storage/redis-doc-store.js'
import { eventually } from './helpers/eventually.js'
import { missing } from './helpers/processes.js'
import { guardOf, startRedis } from './helpers/redis.js'

// Processes' feeds on one real Redis, in this test's process: each must hear the others' stored
// writes, whether the append script published them or the process did (REDIS_WAITAOF), on one
// channel for all documents or on each document's (as on a Redis Cluster), and never its own, which
// it already applied and sent to its editors.

describe('document feeds of two processes sharing one Redis', { skip: missing('redis-server') }, () => {
  /** @type {Awaited<ReturnType<typeof startRedis>>} */
  let redis
  /** @type {Redis[]} */
  const clients = []

  before(async () => { redis = await startRedis() })
  after(async () => {
    for (const client of clients) client.disconnect()
    await redis?.remove()
  })

  /** A process's feed and store, each message it hears kept in `heard`. */
  async function processOnRedis (sharded = false, oneChannel = true, appendSpacingMs = 5) {
    const connect = async () => {
      const client = new Redis(redis.port, '127.0.0.1')
      clients.push(client)
      await once(client, 'ready')
      return client
    }
    const feed = new RedisDocFeed({ publisher: await connect(), subscriber: await connect(), sharded, oneChannel, logger: pino({ level: 'silent' }) })
    /** @type {{ docId: string, updates: number[][] }[]} */
    const heard = []
    feed.onMessage = (docId, { updates }) => heard.push({ docId, updates: updates.map(update => [...update]) })
    const data = await connect()
    return { feed, heard, store: new RedisDocStore(data, { guard: guardOf(data), waitAof: false, feed, appendSpacingMs }) }
  }

  for (const oneChannel of [true, false]) {
    it(`delivers each stored write to the other process only (${oneChannel ? 'one channel' : 'a channel per document'})`, async () => {
      const a = await processOnRedis(false, oneChannel)
      const b = await processOnRedis(false, oneChannel)
      const doc = `doc-${oneChannel}`
      await a.feed.subscribe(doc)
      await b.feed.subscribe(doc)

      await a.store.append(doc, [new Uint8Array([1, 2, 3])])
      await b.store.append(doc, [new Uint8Array([4]), new Uint8Array([5, 6])])
      a.feed.publish(doc, { prev: '0-0', last: '1-0', updates: [new Uint8Array([7])] })

      await eventually(() => b.heard.length === 2, { what: "process A's two writes at B" })
      assert.deepEqual(b.heard, [{ docId: doc, updates: [[1, 2, 3]] }, { docId: doc, updates: [[7]] }])
      // Redis sends a subscriber its messages in the order it took them: once B's next write is at A,
      // anything of A's own would have arrived before it.
      await b.store.append(doc, [new Uint8Array([8])])
      await eventually(() => a.heard.some(({ updates }) => updates[0][0] === 8), { what: "process B's last write at A" })
      assert.deepEqual(a.heard, [{ docId: doc, updates: [[4], [5, 6]] }, { docId: doc, updates: [[8]] }])
      assert.equal(b.heard.length, 2)
    })
  }

  for (const sharded of [true, false]) {
    it(`sends a run's writes in one message, and each process takes only the documents it holds (${sharded ? 'sharded' : 'classic'} pub/sub)`, async () => {
      const [a, b, c] = [await processOnRedis(sharded), await processOnRedis(sharded), await processOnRedis(sharded)]
      const [left, right, unheard] = ['left', 'right', 'unheard'].map(name => `${name}-${sharded}`)
      for (const doc of [left, right, unheard]) await a.feed.subscribe(doc)
      await b.feed.subscribe(left)
      await c.feed.subscribe(right)
      const published = await publishCount(a, sharded)

      // Given in one turn, the three go in one run of the script.
      await Promise.all([
        a.store.append(left, [new Uint8Array([1])]),
        a.store.append(right, [new Uint8Array([2]), new Uint8Array([3])]),
        a.store.append(unheard, [new Uint8Array([4])])
      ])
      await eventually(() => b.heard.length === 1 && c.heard.length === 1, { what: 'each write at the process holding its document' })
      assert.equal(await publishCount(a, sharded), published + 1, 'one message for the run')
      assert.deepEqual(b.heard, [{ docId: left, updates: [[1]] }])
      assert.deepEqual(c.heard, [{ docId: right, updates: [[2], [3]] }])
    })
  }

  for (const sharded of [true, false]) {
    it(`publishes a write only while another process listens to its document (${sharded ? 'sharded' : 'classic'} pub/sub)`, async () => {
      const a = await processOnRedis(sharded)
      const b = await processOnRedis(sharded)
      const doc = `alone-${sharded}`
      const published = () => publishCount(a, sharded)
      await a.feed.subscribe(doc)
      const before = await published()
      await a.store.append(doc, [new Uint8Array([1])])
      assert.equal(await published(), before, 'published with no other process listening')

      await b.feed.subscribe(doc)
      await a.store.append(doc, [new Uint8Array([2])])
      await eventually(() => b.heard.some(({ updates }) => updates[0][0] === 2), { what: 'the write at B once B listens' })
      assert.equal(await published(), before + 1)

      // A process that does not listen itself publishes whenever another does.
      await a.feed.unsubscribe(doc)
      await b.store.append(doc, [new Uint8Array([3])])
      await a.store.append(doc, [new Uint8Array([4])])
      await eventually(() => b.heard.some(({ updates }) => updates[0][0] === 4), { what: "A's write at B while A does not listen" })
      assert.equal(await published(), before + 2, "B's own write, with only B listening, is not published")

      await b.feed.unsubscribe(doc)
      await a.store.append(doc, [new Uint8Array([5])])
      assert.equal(await published(), before + 2, 'published after every other process left')
      assert.deepEqual(b.heard.filter(({ docId }) => docId === doc).map(({ updates }) => updates[0][0]), [2, 4])
    })
  }

  it('counts itself among a document\'s listeners again once its subscriber is back from a dropped connection', async () => {
    const a = await processOnRedis(true)
    const doc = 'reconnected'
    await a.feed.subscribe(doc)
    assert.equal(a.feed.holds(doc), true)
    const id = await a.feed.subscriber.client('ID')
    const closed = once(a.feed.subscriber, 'close')
    await a.store.client.client('KILL', 'ID', String(id))
    await closed
    assert.equal(a.feed.holds(doc), false, 'still counted itself with its connection gone')
    await eventually(() => a.feed.holds(doc), { what: 'the subscription confirmed again' })
    const published = () => publishCount(a, true)
    const before = await published()
    await a.store.append(doc, [new Uint8Array([1])])
    assert.equal(await published(), before, 'published while it alone listens')
  })

  /** The messages Redis has taken, all processes': INFO commandstats. @param {{ store: RedisDocStore }} process @param {boolean} sharded */
  async function publishCount ({ store }, sharded) {
    const stats = String(await store.client.info('commandstats'))
    return Number(new RegExp(`cmdstat_${sharded ? 'spublish' : 'publish'}:calls=(\\d+)`).exec(stats)?.[1] ?? 0)
  }
})
