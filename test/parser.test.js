import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { io } from 'socket.io-client'
import { Decoder, Encoder } from '../isomorphic/parser.js'
import { EVENTS } from '../isomorphic/events.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { createSession, startServer } from './helpers/server.js'

describe('the MessagePack parser', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  before(async () => { tandem = await startServer() })
  after(async () => { await tandem.close() })

  it('carries a packet with binary through one frame, bytes intact', () => {
    const update = Uint8Array.of(1, 2, 3, 250)
    const frames = new Encoder().encode({ type: 2, nsp: '/', id: 7, data: [EVENTS.UPDATE, { doc: 'abc', update }] })
    assert.equal(frames.length, 1)
    const decoder = new Decoder()
    /** @type {any[]} */
    const decoded = []
    decoder.on('decoded', (/** @type {any} */ packet) => decoded.push(packet))
    decoder.add(frames[0])
    assert.equal(decoded.length, 1)
    assert.equal(decoded[0].id, 7)
    assert.deepEqual([...decoded[0].data[1].update], [...update])
  })

  it('refuses frames that are not a well-formed packet', () => {
    const decoder = new Decoder()
    const malformed = [
      'a text frame',
      Uint8Array.of(0xc1),
      new Encoder().encode({ type: 9, nsp: '/', data: [] })[0],
      new Encoder().encode({ type: 2, nsp: 5, data: [] })[0],
      new Encoder().encode({ type: 2, nsp: '/', data: 'not an array' })[0],
      new Encoder().encode({ type: 2, nsp: '/', data: ['x'], id: 'seven' })[0]
    ]
    for (const frame of malformed) assert.throws(() => decoder.add(frame), String(frame))
  })

  it('delivers an update to each receiver as one WebSocket frame', async () => {
    const { id } = await createSession(tandem.url)
    const [alice, bob] = [new TestEditor(tandem.url), new TestEditor(tandem.url)]
    await alice.join(id)
    await bob.join(id)
    let frames = 0
    bob.socket.io.engine.on('packet', (/** @type {{ type: string }} */ packet) => { if (packet.type === 'message') frames++ })
    assert.deepEqual(await alice.insert(id, 0, 'one frame'), { ok: true })
    await eventually(() => bob.text(id) === 'one frame')
    assert.equal(frames, 1)
    for (const e of [alice, bob]) e.close()
  })

  it('drops a client on the default parser, or one sending garbage, and keeps serving the others', async () => {
    const { id } = await createSession(tandem.url)
    const alice = new TestEditor(tandem.url)
    await alice.join(id)
    const stranger = io(tandem.url, { transports: ['websocket'], reconnection: false })
    const outcome = await new Promise(resolve => {
      stranger.once('connect', () => resolve('connected'))
      stranger.io.once('close', () => resolve('closed'))
    })
    assert.equal(outcome, 'closed', 'a default-parser client never connects')
    stranger.close()
    const mallory = new TestEditor(tandem.url)
    await mallory.connected()
    const gone = new Promise(resolve => mallory.socket.once('disconnect', resolve))
    mallory.socket.io.engine.send(Uint8Array.of(0x92, 0xc1, 0xff))
    await gone
    assert.deepEqual(await alice.insert(id, 0, 'still here'), { ok: true })
    alice.close()
  })
})
