import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { TEXT_NAME } from '../isomorphic/events.js'
import { Region, layout } from '../loadtest/edits/regions.js'
import { EditorStats } from '../loadtest/editor-stats.js'
import { LatencyRecorder, createHistogram, encode, merge, recentP99Ms, recordMs, summarize } from '../loadtest/histogram.js'
import { assignThreads, planRooms } from '../loadtest/plan.js'
import { ReceiptCursor, SendLog } from '../loadtest/send-log.js'

describe('load test percentiles', () => {
  it('merges histograms from several threads before taking percentiles', () => {
    const fast = createHistogram()
    const slow = createHistogram()
    for (let i = 1; i <= 990; i++) recordMs(fast, 1)
    for (let i = 1; i <= 10; i++) recordMs(slow, 100)
    const total = summarize(merge([encode(fast), encode(slow)]))
    assert.equal(total?.count, 1000)
    assert.equal(total?.p50, 1)
    assert.equal(total?.p90, 1)
    assert.equal(total?.p99, 1)
    assert.ok(Math.abs(/** @type {number} */ (total?.max) - 100) < 0.1)
    // An average of the two threads' p99s (1 and 100 ms) would say 50.5 ms; the merged p99 is 1 ms.
  })

  it('keeps three significant digits down to a microsecond', () => {
    const histogram = createHistogram()
    for (const ms of [0.0123, 1.234, 12.34, 123.4]) recordMs(histogram, ms)
    const summary = summarize(histogram)
    assert.ok(Math.abs(/** @type {number} */ (summary?.max) - 123.4) / 123.4 < 0.001)
    assert.equal(summarize(createHistogram()), null)
  })

  it('records latencies into the same slots as HDR itself, and takes the same p99 of the last second', () => {
    const direct = createHistogram()
    const recorder = new LatencyRecorder()
    const edges = [0, 0.0004, 0.001, 1.023, 1.024, 2.047, 2.048, 2.049, 4.095, 4.096, 1e12]
    let seed = 1
    const random = () => (seed = Math.imul(seed, 48271) % 0x7fffffff) / 0x7fffffff
    const spread = Array.from({ length: 20000 }, () => Math.exp(random() * 20) / 1000)
    for (const ms of [...edges, ...spread]) {
      recordMs(direct, ms)
      recorder.record(ms)
    }
    assert.equal(encode(recorder.histogram()), encode(direct))
    // Read twice: what was handed over is not counted again.
    assert.equal(recorder.histogram().totalCount, edges.length + spread.length)
    // The live line's p99, over two threads' last second, is HDR's p99 of both.
    const other = new LatencyRecorder()
    for (let i = 0; i < 500; i++) {
      other.record(300 + i)
      recordMs(direct, 300 + i)
    }
    assert.equal(recentP99Ms([recorder.takeRecent(), other.takeRecent()]), summarize(direct)?.p99)
    assert.equal(recentP99Ms([recorder.takeRecent(), other.takeRecent()]), null)
  })

  it('reports the latencies since the last progress line, while the level keeps them all', () => {
    const stats = new EditorStats()
    for (let i = 0; i < 100; i++) stats.recordBroadcast(50)
    const first = recentP99Ms([stats.takeRecent().broadcast])
    for (let i = 0; i < 10; i++) stats.recordBroadcast(2)
    const second = recentP99Ms([stats.takeRecent().broadcast])
    assert.ok(Math.abs(/** @type {number} */ (first) - 50) < 0.05)
    assert.ok(Math.abs(/** @type {number} */ (second) - 2) < 0.01)
    assert.equal(recentP99Ms([stats.takeRecent().broadcast]), null)
    assert.equal(summarize(merge([stats.toMessage().histograms.broadcast]))?.count, 110)
  })
})

describe('load test send log', () => {
  it('matches each send once, from relayed or merged updates, across senders', () => {
    const base = 1000
    const log = SendLog.create(2, 64)
    const senders = [0, 1].map(index => {
      const doc = new Y.Doc()
      doc.clientID = base + index
      return doc
    })
    /** @type {Uint8Array[][]} */
    const updates = [[], []]
    senders.forEach((doc, index) => {
      for (let i = 0; i < 3; i++) {
        const first = Y.getState(doc.store, doc.clientID)
        doc.once('update', (/** @type {Uint8Array} */ update) => updates[index].push(update))
        doc.getText(TEXT_NAME).insert(0, 'ab')
        log.record(index, first, 100 * index + i)
      }
    })
    /** @type {number[]} */
    const matched = []
    const cursor = new ReceiptCursor(log)
    const receive = (/** @type {Uint8Array} */ update) => {
      const { from, to } = Y.parseUpdateMeta(update)
      for (const [client, first] of from) cursor.match(client - base, first, /** @type {number} */ (to.get(client)), time => matched.push(time))
    }
    receive(updates[0][0])
    receive(updates[0][0]) // a duplicate counts once
    receive(Y.mergeUpdates([updates[0][1], updates[0][2], updates[1][0], updates[1][1]]))
    receive(updates[1][2])
    assert.deepEqual(matched.sort((a, b) => a - b), [0, 1, 2, 100, 101, 102])
  })
})

describe('load test regions', () => {
  it('keeps each editor inside its own region while others edit theirs', () => {
    const docs = [0, 1, 2].map(() => new Y.Doc())
    docs[0].getText(TEXT_NAME).insert(0, layout(['aaa', 'bbb', 'ccc']))
    const state = Y.encodeStateAsUpdate(docs[0])
    for (const doc of docs.slice(1)) Y.applyUpdate(doc, state)
    const regions = docs.map((doc, slot) => new Region(doc.getText(TEXT_NAME), slot, 3))
    // Concurrent edits at both ends of every region, then sync everyone.
    docs.forEach((doc, slot) => {
      const text = doc.getText(TEXT_NAME)
      text.insert(regions[slot].end(), `>${slot}`)
      text.delete(regions[slot].start(), 1)
      text.insert(regions[slot].start(), `<${slot}`)
    })
    const merged = Y.mergeUpdates(docs.map(doc => Y.encodeStateAsUpdate(doc)))
    for (const doc of docs) Y.applyUpdate(doc, merged)
    const text = docs[0].getText(TEXT_NAME).toString()
    assert.equal(text, layout(['<0aa>0', '<1bb>1', '<2cc>2']))
    assert.equal(text.slice(regions[1].start(), regions[1].end()), '<1bb>1')
  })
})

describe('load test layout', () => {
  it('fills rooms in order and gives threads contiguous editors', () => {
    assert.deepEqual(planRooms(7, 3).map(e => `${e.room}:${e.slot}/${e.slots}`), ['0:0/3', '0:1/3', '0:2/3', '1:0/3', '1:1/3', '1:2/3', '2:0/1'])
    assert.deepEqual(planRooms(3, Infinity).map(e => e.room), [0, 0, 0])
    assert.deepEqual(assignThreads(5, 2), [[0, 1], [2, 3, 4]])
  })
})
