import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Redis } from 'ioredis'
import { compareIds } from '../server/storage/stream-ids.js'
import { RedisDocStore } from '../server/storage/redis-doc-store.js'
import { missing } from './helpers/processes.js'
import { guardOf, startRedis } from './helpers/redis.js'

// Appends of many documents go to Redis together, in one script (server/storage/redis-batch.js):
// each must still be stored, answered with its own span, and refused on its own when Redis or its
// document cannot take it.

describe('appends sent to Redis together', { skip: missing('redis-server') }, () => {
  /** @param {import('node:test').TestContext} t */
  async function storeOnRedis (t, appendSpacingMs = 5) {
    const redis = await startRedis()
    const client = new Redis(redis.port, '127.0.0.1', { enableOfflineQueue: false, maxRetriesPerRequest: 1 })
    client.on('error', () => {})
    await new Promise(resolve => client.once('ready', resolve))
    t.after(async () => {
      client.disconnect()
      await redis.remove()
    })
    return { redis, store: new RedisDocStore(client, { guard: guardOf(client), waitAof: false, appendSpacingMs }) }
  }

  const update = (/** @type {number} */ n) => new Uint8Array([n % 256, 1, 2, 3])

  it('stores the appends of many documents at once, each answered with its own span', async (t) => {
    const { store } = await storeOnRedis(t)
    const docs = Array.from({ length: 40 }, (_, i) => `batch-doc-${i}`)
    // Three bursts: the first goes at once, the next two wait for the spacing and go as one each.
    /** @type {{ span?: { prev: string, last: string }, logLength?: number }[]} */
    let appended = []
    for (let round = 0; round < 3; round++) {
      appended = await Promise.all(docs.map((doc, i) => store.append(doc, [update(i + round), update(i + round + 100)])))
      appended.forEach(({ span, logLength }, i) => {
        assert.equal(logLength, 2 * (round + 1), `${docs[i]} after round ${round}`)
        assert.ok(span && compareIds(span.last, span.prev) > 0, `${docs[i]} has a span of its own`)
      })
    }
    for (const [i, doc] of docs.entries()) {
      const { updates, position } = await store.readSince(doc, null)
      assert.deepEqual(updates, [0, 1, 2].flatMap(round => [update(i + round), update(i + round + 100)]), doc)
      assert.equal(appended[i].span?.last, position, `${doc}: the last append's span ends at its own last entry`)
    }
  })

  it('answers each append with a span that starts where the last one ended: at first, after a compaction, and on a log kept before its last entry was recorded', async (t) => {
    const { store } = await storeOnRedis(t)
    const doc = 'chained-doc'
    const first = await store.append(doc, [update(1)])
    assert.equal(first.span?.prev, '0-0')
    const second = await store.append(doc, [update(2), update(3)])
    assert.equal(second.span?.prev, first.span?.last)
    // A log written before the newest entry was kept beside it: the entry is read from the log.
    await store.client.hdel(`tandem:{doc:${doc}}:snap`, 'last')
    const third = await store.append(doc, [update(4)])
    assert.equal(third.span?.prev, second.span?.last)
    // A compaction that covers the whole log trims it empty.
    assert.equal(await store.compact(doc, async () => ({ snapshot: update(5), position: third.span?.last ?? null })), true)
    assert.equal(await store.client.exists(`tandem:{doc:${doc}}:log`), 0, 'an emptied log is removed')
    const fourth = await store.append(doc, [update(6)])
    assert.equal(fourth.span?.prev, third.span?.last)
    assert.equal(fourth.logLength, 1, 'the log\'s length counts from the compaction')
    assert.deepEqual((await store.readSince(doc, third.span?.last ?? null)).updates, [update(6)])
  })

  it('starts a removed log after its newest entry even when Redis\'s clock is behind it', async (t) => {
    const { store } = await storeOnRedis(t)
    const doc = 'clock-doc'
    const first = await store.append(doc, [update(1)])
    assert.equal(await store.compact(doc, async () => ({ snapshot: update(2), position: first.span?.last ?? null })), true)
    // As if the entries had been made on a host whose clock ran ahead of this Redis's.
    await store.client.hset(`tandem:{doc:${doc}}:snap`, 'last', '9999999999999-5', 'position', '9999999999999-5')
    const next = await store.append(doc, [update(3), update(4)])
    assert.equal(next.span?.prev, '9999999999999-5')
    assert.ok(compareIds(/** @type {string} */ (next.span?.last), '9999999999999-6') >= 0, `${next.span?.last} comes after the newest entry`)
    assert.deepEqual((await store.readSince(doc, '9999999999999-5')).updates, [update(3), update(4)])
  })

  it('refuses the append of a deleted document and stores the others sent with it', async (t) => {
    const { store } = await storeOnRedis(t)
    const docs = Array.from({ length: 6 }, (_, i) => `mixed-doc-${i}`)
    await Promise.all(docs.map((doc, i) => store.append(doc, [update(i)])))
    await store.delete(docs[2])
    // The first append goes at once; the rest wait for the spacing and go together, the deleted
    // document among them.
    await store.append('opener', [update(9)])
    const results = await Promise.allSettled(docs.map((doc, i) => store.append(doc, [update(i + 10)])))
    assert.deepEqual(results.map(result => result.status), docs.map((_, i) => i === 2 ? 'rejected' : 'fulfilled'))
    assert.equal(/** @type {PromiseRejectedResult} */ (results[2]).reason.code, 'NOT_FOUND')
    for (const [i, doc] of docs.entries()) {
      const { updates } = await store.readSince(doc, null)
      assert.deepEqual(updates, i === 2 ? [] : [update(i), update(i + 10)], doc)
    }
  })

  it('holds an append that follows another until the next multiple of the spacing on the wall clock (REDIS_APPEND_SPACING_MS)', async (t) => {
    const spacingMs = 300
    const { store } = await storeOnRedis(t, spacingMs)
    const wallClock = () => performance.timeOrigin + performance.now()
    // Two thirds into a slot: the next multiple is 100 ms away, a whole spacing 300 ms.
    await new Promise(resolve => setTimeout(resolve, (spacingMs - wallClock() % spacingMs) + 200))
    // The first goes at the end of its turn; the next, sent once it is answered, waits for the slot.
    await store.append('spaced-a', [update(1)])
    const nextSlot = Math.ceil(wallClock() / spacingMs) * spacingMs
    await store.append('spaced-b', [update(2)])
    const answeredAt = wallClock()
    // Node's timers count whole milliseconds of the event loop's clock, so one may fire up to a
    // millisecond before the exact fraction; an append not held would come 100 ms early.
    assert.ok(answeredAt >= nextSlot - 1, `answered ${(nextSlot - answeredAt).toFixed(1)} ms before the next multiple: not held`)
    assert.ok(answeredAt < nextSlot + spacingMs / 2, `answered ${(answeredAt - nextSlot).toFixed(1)} ms after the next multiple: held past it`)
  })

  it('sends one script at a time: the appends of a turn go together, and those made meanwhile with the next', async (t) => {
    const { store } = await storeOnRedis(t, 0)
    const scripts = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(String(await store.client.info('commandstats')))?.[1] ?? 0)
    await store.append('warm', [update(0)])
    const before = await scripts()
    const docs = Array.from({ length: 20 }, (_, i) => `turn-doc-${i}`)
    const first = docs.map((doc, i) => store.append(doc, [update(i)]))
    // Made while the first script is in flight: they wait for its answer, then go as one.
    await new Promise(resolve => setImmediate(resolve))
    const second = docs.map((doc, i) => store.append(doc, [update(i + 50)]))
    const answers = await Promise.all([...first, ...second])
    assert.equal(await scripts() - before, 2, 'one script for each group')
    answers.slice(20).forEach(({ logLength }, i) => assert.equal(logLength, 2, docs[i]))
  })

  it('refuses each append of a batch, and none hangs, while Redis is down', async (t) => {
    const { redis, store } = await storeOnRedis(t)
    await store.append('warm', [update(0)])
    await redis.stop()
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => store.append(`down-${i}`, [update(i)])))
    assert.deepEqual(results.map(result => result.status), Array(10).fill('rejected'))
  })
})
