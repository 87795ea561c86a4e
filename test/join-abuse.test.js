import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as encoding from 'lib0/encoding'
import { EVENTS } from '../isomorphic/events.js'
import { TestEditor } from './helpers/editor.js'
import { createSession, manualClock, startServer } from './helpers/server.js'

// A join's state vector is the client's to make as large as an update: it is limited and counted
// like one before the server decodes it or looks anything up.

/** A state vector naming `clients` clients. @param {number} clients */
function stateVector (clients) {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, clients)
  for (let client = 1; client <= clients; client++) {
    encoding.writeVarUint(encoder, client)
    encoding.writeVarUint(encoder, 1)
  }
  return encoding.toUint8Array(encoder)
}

describe('a join\'s state vector', () => {
  it('is refused BAD_REQUEST when it names more clients than a document may hold', async () => {
    const tandem = await startServer({ maxDocClients: 1000 })
    const { id } = await createSession(tandem.url)
    const editor = new TestEditor(tandem.url)
    await editor.connected()
    const refused = await editor.request(EVENTS.JOIN, { doc: id, sv: stateVector(1001) })
    assert.equal(refused.ok, false)
    assert.equal(refused.error.code, 'BAD_REQUEST')
    assert.equal((await editor.request(EVENTS.JOIN, { doc: id, sv: stateVector(1000) })).ok, true)
    editor.close()
    await tandem.close()
  })

  it('takes a join from the limit before it is read, valid or not', async () => {
    const tandem = await startServer({ joinsPerMinute: 2 }, { now: manualClock().now })
    const { id } = await createSession(tandem.url)
    const editor = new TestEditor(tandem.url)
    await editor.connected()
    const codes = []
    for (let i = 0; i < 3; i++) codes.push((await editor.request(EVENTS.JOIN, { doc: id, sv: Uint8Array.of(5, 1) })).error?.code)
    assert.deepEqual(codes, ['BAD_REQUEST', 'BAD_REQUEST', 'RATE_LIMITED'])
    editor.close()
    await tandem.close()
  })

  it('counts against the connection\'s bytes per second', async () => {
    const tandem = await startServer({ bytesPerSecond: 1024 * 1024, maxDocClients: 100_000 }, { now: manualClock().now })
    const { id } = await createSession(tandem.url)
    const editor = new TestEditor(tandem.url)
    await editor.connected()
    const sv = stateVector(100_000) // 383 KB: the third join is past 1 MiB
    const replies = []
    for (let i = 0; i < 3; i++) replies.push(await editor.request(EVENTS.JOIN, { doc: id, sv }))
    assert.deepEqual(replies.map(reply => reply.ok || reply.error.code), [true, true, 'RATE_LIMITED'])
    editor.close()
    await tandem.close()
  })
})
