import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { closedWithin, rawWebSocket } from './helpers/raw-engine.js'
import { api, startServer } from './helpers/server.js'

// A MessagePack map key that is itself a map: `{__proto__: [], length: n}` is array-like, and
// turning it into a property name joins n elements. Sent by anyone who opens a WebSocket, before
// any auth, it must cost the server nothing.

const MiB = 1024 * 1024

/** The frame, for a length of 8 hex digits. @param {string} length */
const joinFrame = length => new Uint8Array(Buffer.from(`8182a95f5f70726f746f5f5f90a66c656e677468ce${length}c0`, 'hex'))

describe('a map key that is not a string or an integer', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  before(async () => { tandem = await startServer({ connectionsPerMinute: 0 }) })
  after(() => tandem.close())

  it('closes the WebSocket that sends it at once, leaving the server responsive', async () => {
    // A hundred million first, which a decoder that joins takes seconds over, so that on such a
    // decoder the test fails there rather than spending the longest join V8 allows.
    for (const length of ['05f5e100', '1fffffe8']) {
      const rss = process.memoryUsage().rss
      const ws = await rawWebSocket(tandem.url)
      const closed = closedWithin(ws).catch(() => Infinity) // still open: reported below
      ws.send(joinFrame(length))
      const started = performance.now()
      const health = await api(tandem.url, '/api/health')
      const latency = performance.now() - started
      assert.equal(health.status, 200)
      assert.ok(latency < 2000, `${length}: /api/health took ${Math.round(latency)} ms`)
      assert.ok(await closed < 2000, `${length}: the connection is closed at once`)
      const grown = process.memoryUsage().rss - rss
      assert.ok(grown < 64 * MiB, `${length}: RSS grew ${Math.round(grown / MiB)} MiB`)
    }
  })
})
