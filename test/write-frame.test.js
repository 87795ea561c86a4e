import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import pino from 'pino'
import * as Y from 'yjs'
import { EVENTS } from '../isomorphic/events.js'
import { DIRECT_WRITE_ASSUMPTIONS, directWriteProblem } from '../server/realtime/write-frame.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { contentOf, createSession, startServer } from './helpers/server.js'

// The engine.io that socket.io loads, and the ws that engine.io loads: the versions the server runs.
const require = createRequire(import.meta.url)
const engineMain = require.resolve('engine.io', { paths: [dirname(require.resolve('socket.io'))] })
const engineVersion = JSON.parse(readFileSync(join(dirname(engineMain), '..', 'package.json'), 'utf8')).version
const wsVersion = createRequire(engineMain)('ws/package.json').version

/**
 * The server's Engine.IO connection of an editor.
 * @param {Awaited<ReturnType<typeof startServer>>} tandem
 * @param {TestEditor} editor
 * @returns {any}
 */
function connOf (tandem, editor) {
  const conn = tandem.server.io.of('/').sockets.get(/** @type {string} */ (editor.socket.id))?.conn
  assert.ok(conn, 'the editor\'s connection on the server')
  return conn
}

/** @param {object} target @param {Record<string, unknown>} values `target` seen with these values instead */
const overlay = (target, values) => Object.create(target, Object.fromEntries(Object.entries(values).map(([key, value]) => [key, { value }])))

describe('what writing frames directly assumes of the installed engine.io and ws', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {Record<string, any>} connections over WebSocket, by how they got there */
  const conns = {}

  before(async () => {
    tandem = await startServer()
    const session = await createSession(tandem.url)
    const direct = new TestEditor(tandem.url)
    const upgraded = new TestEditor(tandem.url, { transports: ['polling', 'websocket'] })
    await direct.join(session.id)
    await upgraded.join(session.id)
    conns['opened over WebSocket'] = connOf(tandem, direct)
    conns['upgraded from long-polling'] = connOf(tandem, upgraded)
    await eventually(() => conns['upgraded from long-polling'].transport.name === 'websocket', { what: 'the upgrade' })
  })
  after(() => tandem.close())

  for (const [assumption, holds] of DIRECT_WRITE_ASSUMPTIONS) {
    it(assumption, () => {
      for (const [how, conn] of Object.entries(conns)) {
        let held
        try {
          held = holds(conn)
        } catch (err) {
          held = err
        }
        assert.equal(held, true,
          `"${assumption}" no longer holds for a connection ${how} (engine.io ${engineVersion}, ws ${wsVersion}): ` +
          'every frame now goes through Engine.IO; adapt server/realtime/write-frame.js to this version')
      }
    })
  }

  it('names the first assumption a connection breaks', () => {
    const conn = conns['opened over WebSocket']
    assert.equal(directWriteProblem(conn), null)
    assert.equal(directWriteProblem(overlay(conn, { upgrading: undefined })), 'engine.io Socket#upgrading is a boolean')
    const webSocket = conn.transport.socket
    const withSender = (/** @type {unknown} */ sender) =>
      overlay(conn, { transport: overlay(conn.transport, { socket: overlay(webSocket, { _sender: sender }) }) })
    assert.equal(directWriteProblem(withSender(overlay(webSocket._sender, { sendFrame: undefined }))),
      'ws WebSocket#_sender.sendFrame is a function')
    // A Sender that queues what it is given, as one that waits for a compression in progress does.
    class QueueingSender extends webSocket._sender.constructor {
      /** @param {Buffer[]} list */
      sendFrame (list) { setImmediate(() => super.sendFrame(list)) }
    }
    assert.equal(directWriteProblem(withSender(overlay(webSocket._sender, { constructor: QueueingSender }))),
      'ws Sender#sendFrame([frame]) writes the frame as it is, at once')
  })
})

describe('writing frames when engine.io or ws lacks what the direct path assumes', () => {
  it('delivers every update and ACK through Engine.IO, in order, and says once which assumption failed', async (t) => {
    /** @type {any[]} */
    const lines = []
    const logger = pino({ level: 'warn' }, new Writable({ write (chunk, _encoding, done) { lines.push(JSON.parse(String(chunk))); done() } }))
    const tandem = await startServer({}, { logger })
    t.after(() => tandem.close())
    // As an engine.io that renamed the field would be: every connection lacks it from the start.
    tandem.server.io.engine.on('connection', (/** @type {any} */ conn) => { delete conn.upgrading })
    const session = await createSession(tandem.url)
    const [alice, bob, carol] = [new TestEditor(tandem.url), new TestEditor(tandem.url), new TestEditor(tandem.url)]
    t.after(() => { for (const editor of [alice, bob, carol]) editor.close() })
    for (const editor of [alice, bob, carol]) await editor.join(session.id)
    /** @type {unknown[]} */
    const throughEngine = []
    connOf(tandem, bob).on('packetCreate', (/** @type {unknown} */ packet) => throughEngine.push(packet))

    const acks = []
    for (let i = 0; i < 40; i++) {
      acks.push(alice.insert(session.id, alice.text(session.id).length, `${i};`))
      acks.push(bob.insert(session.id, 0, 'b'))
      acks.push(carol.insert(session.id, 0, 'c'))
    }
    assert.ok((await Promise.all(acks)).every(reply => reply.ok === true), 'every update acknowledged')
    await eventually(() => [bob, carol].every(editor => editor.text(session.id) === alice.text(session.id)), { what: 'the editors converging' })
    assert.equal(await contentOf(tandem.url, session.id), alice.text(session.id))
    // Each update from alice that a receiver got starts where the ones before it ended.
    const author = alice.ydoc(session.id).clientID
    for (const receiver of [bob, carol]) {
      let next = 0
      for (const { payload } of receiver.received.filter(r => r.event === EVENTS.UPDATE)) {
        const structs = Y.decodeUpdate(new Uint8Array(payload.update)).structs.filter(struct => struct.id.client === author)
        if (structs.length === 0) continue
        assert.equal(structs[0].id.clock, next, 'an update out of order')
        const last = structs[structs.length - 1]
        next = last.id.clock + last.length
      }
    }
    // Bob's ACKs and the updates relayed to him went through Engine.IO, not past it.
    assert.ok(throughEngine.length >= 40, `${throughEngine.length} packets through Engine.IO`)
    const warnings = lines.filter(line => 'assumption' in line)
    assert.deepEqual(warnings.map(line => line.assumption), ['engine.io Socket#upgrading is a boolean'])
    assert.equal(warnings[0].level, pino.levels.values.warn)
  })
})
