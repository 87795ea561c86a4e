import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as Y from 'yjs'
import { SocketIOProvider } from '../client/src/provider.js'
import { eventually } from './helpers/eventually.js'
import { createSession, startServer } from './helpers/server.js'

// The names y-websocket's WebsocketProvider and Hocuspocus's provider give the same state, so code
// written for them reads this provider unchanged (docs/PROVIDER.md, "The provider").

describe('the provider\'s y-websocket and Hocuspocus names', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  before(async () => { tandem = await startServer() })
  after(async () => { await tandem.close() })

  it('reports shouldConnect, wsconnecting, wsconnected and hasUnsyncedChanges as it connects, edits and disconnects', async () => {
    const { id } = await createSession(tandem.url)
    const ydoc = new Y.Doc()
    const provider = new SocketIOProvider(tandem.url, id, ydoc, { connect: false })
    try {
      assert.deepEqual([provider.shouldConnect, provider.wsconnecting, provider.wsconnected], [false, false, false])
      provider.connect()
      assert.deepEqual([provider.shouldConnect, provider.wsconnecting, provider.wsconnected], [true, true, false])
      await eventually(() => provider.wsconnected && provider.synced, { what: 'joined and synced' })
      assert.equal(provider.wsconnecting, false)

      ydoc.getText('content').insert(0, 'typed')
      assert.equal(provider.hasUnsyncedChanges, true)
      await eventually(() => !provider.hasUnsyncedChanges, { what: 'the edit acknowledged' })

      provider.disconnect()
      assert.deepEqual([provider.shouldConnect, provider.wsconnecting, provider.wsconnected], [false, false, false])
    } finally {
      provider.destroy()
    }
  })

  it('names its session in the Socket.IO handshake, so a balancer can send a session\'s editors to one server', async () => {
    const { id } = await createSession(tandem.url)
    const provider = new SocketIOProvider(tandem.url, id, new Y.Doc())
    try {
      await eventually(() => provider.synced, { what: 'joined and synced' })
      const queries = [...tandem.server.io.sockets.sockets.values()].map(socket => socket.handshake.query.session)
      assert.deepEqual(queries, [id])
    } finally {
      provider.destroy()
    }
  })
})
