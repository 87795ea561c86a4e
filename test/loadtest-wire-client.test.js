import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { io } from 'socket.io-client'
import * as Y from 'yjs'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { PARSER } from '../isomorphic/parser.js'
import { TandemApi } from '../loadtest/api.js'
import { protocol } from '../loadtest/protocols/tandem-wire.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { freePort } from './helpers/processes.js'
import { api, startServer } from './helpers/server.js'

// The load generator's bare-WebSocket Tandem client (`npm run peers -- --tandem-client wire`), against
// a real server and the shipped client's socket.io-client editor in the same document.

const TIMEOUT_MS = 5000

/**
 * @param {string} url
 * @param {string} room
 * @param {string | null} [token]
 * @param {number} [timeoutMs]
 */
function wireEditor (url, room, token = null, timeoutMs = TIMEOUT_MS) {
  /** @type {{ updates: Uint8Array[], lost: string[] }} */
  const heard = { updates: [], lost: [] }
  const connection = protocol.connect({
    url,
    room,
    token,
    timeoutMs,
    on: { update: update => heard.updates.push(update), awareness: () => {}, lost: reason => heard.lost.push(reason) }
  })
  return { connection, heard }
}

/** @param {Y.Doc} ydoc @param {string} text */
function insertAtEnd (ydoc, text) {
  /** @type {Uint8Array | null} */
  let update = null
  ydoc.once('update', (/** @type {Uint8Array} */ made) => { update = made })
  ydoc.getText(TEXT_NAME).insert(ydoc.getText(TEXT_NAME).length, text)
  return /** @type {Uint8Array} */ (/** @type {unknown} */ (update))
}

describe('the load generator\'s wire client', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  before(async () => { tandem = await startServer({ updatesPerSecond: 0 }) })
  after(() => tandem.close())

  it('joins, has its updates stored and acknowledged, and hears the shipped client\'s', async (t) => {
    const { body: session } = await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'wire', content: 'seed\n' } })
    const { connection, heard } = wireEditor(tandem.url, session.id)
    t.after(() => connection.close())
    await connection.open()
    const ydoc = new Y.Doc()
    await connection.join(ydoc)
    assert.equal(ydoc.getText(TEXT_NAME).toString(), 'seed\n', 'the join applied the server\'s state')

    const other = new TestEditor(tandem.url)
    t.after(() => other.close())
    await other.join(session.id)
    assert.deepEqual(await connection.send(insertAtEnd(ydoc, 'wire;')), { ok: true })
    await eventually(() => other.text(session.id) === 'seed\nwire;', { what: 'the shipped client hears the wire client' })
    assert.equal((await api(tandem.url, `/api/sessions/${session.id}/content`)).body, 'seed\nwire;', 'acknowledged means stored')

    assert.deepEqual(await other.insert(session.id, 0, 'io;'), { ok: true })
    await eventually(() => heard.updates.length > 0, { what: 'the wire client hears the shipped client' })
    for (const update of heard.updates) Y.applyUpdate(ydoc, update)
    assert.equal(ydoc.getText(TEXT_NAME).toString(), 'io;seed\nwire;')
  })

  it('sends an update in the same bytes as the shipped client\'s socket.io-client socket', async (t) => {
    /** @type {Map<string, Buffer[]>} the frames each connection sent, by Engine.IO socket id */
    const frames = new Map()
    const onConnection = (/** @type {any} */ raw) => {
      frames.set(raw.id, [])
      raw.on('packet', (/** @type {{ type: string, data: unknown }} */ packet) => {
        if (packet.type === 'message' && Buffer.isBuffer(packet.data)) frames.get(raw.id)?.push(packet.data)
      })
    }
    const engine = /** @type {any} */ (tandem.server.io.engine)
    engine.on('connection', onConnection)
    t.after(() => engine.off('connection', onConnection))
    const update = new Uint8Array([1, 1, 7, 0, 4, 1, 7, 99, 111, 110, 116, 101, 110, 116, 1, 120, 0])

    const shipped = io(tandem.url, { transports: ['websocket'], parser: PARSER, forceNew: true, reconnection: false })
    t.after(() => shipped.disconnect())
    await new Promise(resolve => shipped.once('connect', () => resolve(undefined)))
    const shippedReply = await shipped.timeout(TIMEOUT_MS).emitWithAck(EVENTS.UPDATE, { doc: 'not-joined', update })
    const { connection } = wireEditor(tandem.url, 'not-joined')
    t.after(() => connection.close())
    await connection.open()
    assert.deepEqual(await connection.send(update), { ok: false, code: shippedReply.error.code })

    const [fromShipped, fromWire] = [...frames.values()]
    assert.equal(fromShipped.length, 2, 'CONNECT, then the update')
    assert.equal(fromWire.length, 2, 'CONNECT, then the update')
    assert.deepEqual(fromWire[1], fromShipped[1], 'the update\'s frame')
  })

  it('rejects open() when the server cannot be reached, and nothing fails after it', async () => {
    const { connection, heard } = wireEditor(`http://127.0.0.1:${await freePort()}`, 'nowhere', null, 200)
    await assert.rejects(connection.open(), /ECONNREFUSED/)
    // Past its connect timeout: an open() that already failed must not reject anything later.
    await new Promise(resolve => setTimeout(resolve, 400))
    assert.deepEqual(heard.lost, [])
  })

  it('gets the refusal code of a bad update, and is told when the document is deleted', async (t) => {
    const { body: session } = await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'wire' } })
    const { connection, heard } = wireEditor(tandem.url, session.id)
    t.after(() => connection.close())
    await connection.open()
    await connection.join(new Y.Doc())
    assert.deepEqual(await connection.send(new Uint8Array([0xff, 0xff, 0xff])), { ok: false, code: 'INVALID_UPDATE' })
    assert.equal((await api(tandem.url, `/api/sessions/${session.id}`, { method: 'DELETE' })).status, 204)
    await eventually(() => heard.lost.includes('closed'), { what: 'doc:closed' })
  })

  it('answers the server\'s pings, so an idle connection stays open past the ping timeout', async (t) => {
    const engine = /** @type {any} */ (tandem.server.io.engine)
    const { pingInterval, pingTimeout } = engine.opts
    engine.opts.pingInterval = 50
    engine.opts.pingTimeout = 100
    t.after(() => Object.assign(engine.opts, { pingInterval, pingTimeout }))
    const { body: session } = await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'wire' } })
    const { connection, heard } = wireEditor(tandem.url, session.id)
    t.after(() => connection.close())
    await connection.open()
    const ydoc = new Y.Doc()
    await connection.join(ydoc)
    await new Promise(resolve => setTimeout(resolve, 500))
    assert.deepEqual(heard.lost, [])
    assert.deepEqual(await connection.send(insertAtEnd(ydoc, 'still here')), { ok: true })
  })
})

describe('the load generator\'s wire client with join tokens', () => {
  it('sends its token in the handshake, and reports a refused one', async (t) => {
    const apiKey = 'k'.repeat(32)
    const tandem = await startServer({ authSecret: 's'.repeat(32), apiKey })
    t.after(() => tandem.close())
    const tandemApi = new TandemApi(tandem.url, apiKey)
    const session = await tandemApi.createSession({ name: 'wire' })
    const { token } = await tandemApi.mintToken(session.id, { user: 'wire', role: 'editor' })

    const allowed = wireEditor(tandem.url, session.id, token)
    t.after(() => allowed.connection.close())
    await allowed.connection.open()
    await allowed.connection.join(new Y.Doc())

    const refused = wireEditor(tandem.url, session.id, 'not-a-token')
    t.after(() => refused.connection.close())
    await assert.rejects(refused.connection.open(), /connect refused/)
  })
})
