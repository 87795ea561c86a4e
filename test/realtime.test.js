import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import pino from 'pino'
import * as Y from 'yjs'
import * as awarenessProtocol from 'y-protocols/awareness'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { TestEditor, cursorIn } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { missing } from './helpers/processes.js'
import { startRedis } from './helpers/redis.js'
import { api, contentOf, createSession, startServer, tempDataDir } from './helpers/server.js'

describe('realtime editing', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let data
  /** @type {TestEditor[]} */
  const editors = []
  const editor = () => {
    const e = new TestEditor(tandem.url)
    editors.push(e)
    return e
  }

  before(async () => {
    data = await tempDataDir()
    tandem = await startServer({ dataDir: data.dir })
  })
  after(async () => {
    for (const e of editors) e.close()
    await tandem.close()
    await data.remove()
  })

  it('answers a join with the document, the server state vector, role and editor count', async () => {
    const session = await createSession(tandem.url, { content: 'fn main() {}' })
    const alice = editor()
    const reply = await alice.join(session.id)
    assert.equal(reply.ok, true)
    assert.ok(reply.update instanceof ArrayBuffer || reply.update instanceof Uint8Array)
    assert.ok(reply.sv instanceof ArrayBuffer || reply.sv instanceof Uint8Array)
    assert.equal(reply.role, 'editor')
    assert.equal(reply.editors, 1)
    assert.equal(alice.text(session.id), 'fn main() {}')
    const bob = editor()
    assert.equal((await bob.join(session.id)).editors, 2)
    assert.equal((await api(tandem.url, `/api/sessions/${session.id}`)).body.editors, 2)
  })

  it('acknowledges every update and relays it to the other editors of the room only', async () => {
    const session = await createSession(tandem.url)
    const other = await createSession(tandem.url)
    const [alice, bob, carol, dave] = [editor(), editor(), editor(), editor()]
    await alice.join(session.id)
    await bob.join(session.id)
    await carol.join(other.id)
    await dave.join(other.id)
    assert.deepEqual(await alice.insert(session.id, 0, 'let x = 1'), { ok: true })
    await eventually(() => bob.text(session.id) === 'let x = 1')
    // Markers sent after Alice's update was relayed, one per room: an echo to Alice, or a leak to
    // Carol, would have been sent on their connection before the marker, so once it is in, so is that.
    assert.deepEqual(await bob.insert(session.id, 0, '>'), { ok: true })
    assert.deepEqual(await dave.insert(other.id, 0, '>'), { ok: true })
    await eventually(() => alice.text(session.id) === '>let x = 1' && carol.text(other.id) === '>', { what: 'markers' })
    assert.equal(alice.received.filter(r => r.event === EVENTS.UPDATE).length, 1, 'the sender gets no echo, only the marker')
    assert.equal(carol.received.filter(r => r.event === EVENTS.UPDATE).length, 1, 'other rooms hear nothing but their own marker')
    assert.equal(await contentOf(tandem.url, session.id), '>let x = 1')
  })

  it('relays updates whatever the length of their WebSocket frame', async () => {
    const session = await createSession(tandem.url)
    const [alice, bob] = [editor(), editor()]
    await alice.join(session.id)
    await bob.join(session.id)
    // A frame's length takes 7 bits up to 125 bytes, 16 bits more up to 65,535, else 64 bits more.
    for (const length of [1, 200, 70_000]) {
      const before = bob.received.length
      assert.deepEqual(await alice.insert(session.id, 0, 'x'.repeat(length)), { ok: true })
      await eventually(() => bob.text(session.id) === alice.text(session.id), { what: `an insert of ${length} characters` })
      const relayed = bob.received.slice(before).filter(r => r.event === EVENTS.UPDATE)
      assert.equal(relayed.length, 1)
      const update = new Uint8Array(relayed[0].payload.update)
      assert.ok(update.byteLength > length, `${update.byteLength} bytes for ${length} characters`)
    }
    assert.ok(bob.socket.connected && alice.socket.connected)
  })

  it('relays to editors on long-polling, upgrading and on WebSocket alike, each in the order the updates were applied', async () => {
    const session = await createSession(tandem.url)
    const notJoined = await createSession(tandem.url)
    const alice = editor()
    const receivers = [
      new TestEditor(tandem.url, { transports: ['polling'] }),
      new TestEditor(tandem.url, { transports: ['polling', 'websocket'] }),
      editor()
    ]
    editors.push(receivers[0], receivers[1])
    await alice.join(session.id)
    for (const receiver of receivers) await receiver.join(session.id)
    // The receivers type too, and send events the server refuses: a refusal goes through Engine.IO
    // (an accepted update's ACK does not), so relayed updates and ACKs meet a busy connection now
    // and then, and wait in Engine.IO's buffer behind what it holds.
    const acks = []
    const refusals = []
    for (let i = 0; i < 40; i++) {
      acks.push(alice.insert(session.id, alice.text(session.id).length, `${i};`))
      for (const receiver of receivers) {
        acks.push(receiver.insert(session.id, 0, 'r'))
        refusals.push(receiver.request(EVENTS.LEAVE, { doc: notJoined.id }))
      }
    }
    assert.ok((await Promise.all(acks)).every(reply => reply.ok === true))
    assert.ok((await Promise.all(refusals)).every(reply => reply.ok === false && reply.error.code === 'NOT_JOINED'))
    await eventually(() => receivers.every(receiver => receiver.text(session.id) === alice.text(session.id)))
    // Each update a receiver got starts where the ones before it ended: none overtook another.
    const author = alice.ydoc(session.id).clientID
    for (const [index, receiver] of receivers.entries()) {
      let next = 0
      for (const { payload } of receiver.received.filter(r => r.event === EVENTS.UPDATE)) {
        const structs = Y.decodeUpdate(new Uint8Array(payload.update)).structs.filter(struct => struct.id.client === author)
        if (structs.length === 0) continue
        assert.equal(structs[0].id.clock, next, `receiver ${index}: an update out of order`)
        const last = structs[structs.length - 1]
        next = last.id.clock + last.length
      }
    }
  })

  it('writes the ACK of an accepted update to the WebSocket directly, and a refusal through Socket.IO', async () => {
    const session = await createSession(tandem.url)
    const alice = editor()
    await alice.join(session.id)
    const conn = tandem.server.io.of('/').sockets.get(/** @type {string} */ (alice.socket.id))?.conn
    assert.ok(conn, 'alice\'s connection on the server')
    /** @type {unknown[]} */
    const throughEngine = []
    conn.on('packetCreate', (/** @type {unknown} */ packet) => throughEngine.push(packet))
    for (let i = 0; i < 20; i++) assert.deepEqual(await alice.insert(session.id, 0, `${i};`), { ok: true })
    assert.equal(throughEngine.length, 0, 'no ACK of an accepted update went through Engine.IO')
    const other = await createSession(tandem.url)
    const refused = await alice.request(EVENTS.UPDATE, { doc: other.id, update: Y.encodeStateAsUpdate(alice.ydoc(session.id)) })
    assert.equal(refused.ok, false)
    assert.equal(refused.error.code, 'NOT_JOINED')
    assert.equal(throughEngine.length, 1, 'the refusal went through Socket.IO and Engine.IO')
    assert.equal(await contentOf(tandem.url, session.id), alice.text(session.id))
  })

  it('makes two editors typing concurrently converge to the same text', async () => {
    const session = await createSession(tandem.url, { content: '// shared\n' })
    const [alice, bob] = [editor(), editor()]
    await alice.join(session.id)
    await bob.join(session.id)
    const acks = []
    for (let i = 0; i < 50; i++) {
      acks.push(alice.insert(session.id, alice.text(session.id).length, `a${i};`))
      acks.push(bob.edit(session.id, text => text.insert(0, `b${i};`)))
    }
    const replies = await Promise.all(acks)
    assert.ok(replies.every(reply => reply.ok === true))
    await eventually(() => alice.text(session.id) === bob.text(session.id) && alice.text(session.id).length === '// shared\n'.length + 2 * (10 * 3 + 40 * 4))
    assert.equal(await contentOf(tandem.url, session.id), alice.text(session.id))
  })

  it('gives a late joiner the full state, and takes what only the joiner had', async () => {
    const session = await createSession(tandem.url)
    const alice = editor()
    await alice.join(session.id)
    for (const word of ['one ', 'two ', 'three ']) await alice.insert(session.id, alice.text(session.id).length, word)
    const late = editor()
    // The late joiner already holds an offline edit: after the join it sends what the server lacks.
    const offline = new Y.Doc()
    offline.getText(TEXT_NAME).insert(0, 'offline ')
    late.docs.set(session.id, offline)
    const reply = await late.join(session.id)
    assert.ok(late.text(session.id).includes('one two three '))
    const missing = Y.encodeStateAsUpdate(offline, new Uint8Array(reply.sv))
    assert.deepEqual(await late.request(EVENTS.UPDATE, { doc: session.id, update: missing }), { ok: true })
    await eventually(() => alice.text(session.id) === late.text(session.id))
    assert.equal(await contentOf(tandem.url, session.id), late.text(session.id))
  })

  it('refuses a join beyond maxEditors with ROOM_FULL and admits again after a leave', async () => {
    const session = await createSession(tandem.url, { maxEditors: 2 })
    const [a, b, c] = [editor(), editor(), editor()]
    await a.join(session.id)
    await b.join(session.id)
    const refused = await c.join(session.id)
    assert.equal(refused.ok, false)
    assert.equal(refused.error.code, 'ROOM_FULL')
    assert.deepEqual(await b.request(EVENTS.LEAVE, { doc: session.id }), { ok: true })
    assert.equal((await c.join(session.id)).ok, true)
  })

  it('admits exactly maxEditors of many editors joining at the same moment', async () => {
    const session = await createSession(tandem.url, { maxEditors: 3 })
    const crowd = Array.from({ length: 8 }, () => editor())
    await Promise.all(crowd.map(e => e.connected()))
    const replies = await Promise.all(crowd.map(e => e.join(session.id)))
    assert.equal(replies.filter(reply => reply.ok).length, 3)
    assert.ok(replies.every(reply => reply.ok || reply.error.code === 'ROOM_FULL'))
    assert.equal(tandem.server.registry.editorCount(session.id), 3)
  })

  it('closes a deleted session for its editors: doc:closed, then their events are refused', async () => {
    const session = await createSession(tandem.url, { content: 'bye' })
    const [alice, bob] = [editor(), editor()]
    await alice.join(session.id)
    await bob.join(session.id)
    assert.equal((await api(tandem.url, `/api/sessions/${session.id}`, { method: 'DELETE' })).status, 204)
    await eventually(() => alice.received.some(r => r.event === EVENTS.CLOSED) && bob.received.some(r => r.event === EVENTS.CLOSED))
    assert.deepEqual(alice.received.find(r => r.event === EVENTS.CLOSED)?.payload, { doc: session.id, reason: 'deleted' })
    const late = await alice.insert(session.id, 0, 'x')
    assert.equal(late.error.code, 'NOT_JOINED')
    assert.equal((await editor().join(session.id)).error.code, 'NOT_FOUND')
    assert.equal((await api(tandem.url, `/api/sessions/${session.id}/content`)).status, 404)
  })

  it('holds several documents on one connection, each event naming its document', async () => {
    const [first, second] = [await createSession(tandem.url), await createSession(tandem.url)]
    const [alice, bob] = [editor(), editor()]
    for (const id of [first.id, second.id]) {
      await alice.join(id)
      await bob.join(id)
    }
    await alice.insert(first.id, 0, 'main.rs')
    await alice.insert(second.id, 0, 'lib.rs')
    await eventually(() => bob.text(first.id) === 'main.rs' && bob.text(second.id) === 'lib.rs')
  })

  it('relays awareness, gives joiners the current cursors, and removes them when a socket drops', async () => {
    const session = await createSession(tandem.url)
    const [alice, bob] = [editor(), editor()]
    await alice.join(session.id)
    await bob.join(session.id)
    const aliceDoc = alice.ydoc(session.id)
    const aliceAwareness = new awarenessProtocol.Awareness(aliceDoc)
    aliceAwareness.setLocalState({ user: { name: 'Alice', color: '#f00' }, cursor: cursorIn(aliceDoc, 3) })
    const update = awarenessProtocol.encodeAwarenessUpdate(aliceAwareness, [aliceDoc.clientID])
    alice.socket.emit(EVENTS.AWARENESS, { doc: session.id, update })

    const bobAwareness = new awarenessProtocol.Awareness(new Y.Doc())
    bob.socket.on(EVENTS.AWARENESS, ({ update }) => awarenessProtocol.applyAwarenessUpdate(bobAwareness, new Uint8Array(update), 'server'))
    await eventually(() => bobAwareness.getStates().get(aliceDoc.clientID)?.user?.name === 'Alice')

    const carol = editor()
    const reply = await carol.join(session.id)
    const carolAwareness = new awarenessProtocol.Awareness(new Y.Doc())
    awarenessProtocol.applyAwarenessUpdate(carolAwareness, new Uint8Array(reply.awareness), 'server')
    assert.deepEqual(carolAwareness.getStates().get(aliceDoc.clientID)?.cursor, cursorIn(aliceDoc, 3))

    alice.close()
    await eventually(() => !bobAwareness.getStates().has(aliceDoc.clientID))
    aliceAwareness.destroy()
    bobAwareness.destroy()
    carolAwareness.destroy()
  })

  it('counts applied updates, their bytes, their deliveries and server-side processing time in /metrics', async () => {
    const before = await api(tandem.url, '/metrics')
    /** The value of the first series whose name and labels start with `series`. @param {string} text @param {string} series */
    const valueOf = (text, series) => {
      const line = text.split('\n').find(line => line.startsWith(series))
      return Number(line?.slice(line.lastIndexOf(' ') + 1) ?? 0)
    }
    const session = await createSession(tandem.url)
    const [alice, bob, carol] = [editor(), editor(), editor()]
    for (const e of [alice, bob, carol]) await e.join(session.id)
    let bytes = 0
    alice.ydoc(session.id).on('update', (/** @type {Uint8Array} */ update, /** @type {unknown} */ origin) => {
      if (origin !== 'remote') bytes += update.byteLength
    })
    for (let i = 0; i < 5; i++) await alice.insert(session.id, 0, 'x')
    await eventually(() => bob.text(session.id) === 'xxxxx' && carol.text(session.id) === 'xxxxx')
    const metrics = await api(tandem.url, '/metrics')
    /** @param {string} series */
    const added = series => valueOf(metrics.body, series) - valueOf(before.body, series)
    assert.equal(added('tandem_update_duration_seconds_count{'), 5)
    assert.equal(added('tandem_updates_applied_total{'), 5)
    assert.equal(added('tandem_update_bytes_total{'), bytes)
    // What the two other editors received (a busy moment may merge updates into one broadcast).
    const relayed = [bob, carol].reduce((sum, e) => sum + e.received.filter(r => r.event === EVENTS.UPDATE).length, 0)
    assert.ok(relayed >= 2, `${relayed} updates relayed`)
    assert.equal(added('tandem_broadcast_deliveries_total{event="doc:update"'), relayed)
    assert.match(metrics.body, /^tandem_connections\{worker="[^"]+"\} \d+/m)
    assert.match(metrics.body, /^nodejs_eventloop_lag_seconds\{/m)
    assert.match(metrics.body, /^nodejs_heap_size_used_bytes\{/m)
  })
})

describe('the log of a connection', () => {
  it('names the connection an update came from when its write is refused', async (t) => {
    /** @type {any[]} */
    const lines = []
    const logger = pino({ level: 'debug' }, new Writable({ write (chunk, _encoding, done) { lines.push(JSON.parse(String(chunk))); done() } }))
    const tandem = await startServer({}, { logger })
    t.after(() => tandem.close())
    const session = await createSession(tandem.url, { content: 'x' })
    const alice = new TestEditor(tandem.url)
    t.after(() => alice.close())
    await alice.join(session.id)
    // Storage refusing the write, as a full disk or a failing database does.
    tandem.server.registry.store.append = async () => { throw new Error('no space left on device') }
    const reply = await alice.insert(session.id, 0, 'a')
    assert.equal(reply.error?.code, 'UNAVAILABLE')
    const refused = lines.find(line => line.msg === 'update could not be stored')
    assert.ok(refused, 'the refused write is logged')
    assert.equal(refused.socket, alice.socket.id)
    assert.equal(refused.doc, session.id)
  })
})

describe('fan-out to a busy room', () => {
  /**
   * A room of `size` editors; Alice sends one update, then thirty emitted in one go, which reach the
   * server together. Returns how many broadcasts Bob got for the thirty, once every editor has them.
   * @param {number} size
   */
  async function burstInRoomOf (size) {
    const tandem = await startServer()
    const { id } = await createSession(tandem.url)
    const editors = Array.from({ length: size }, () => new TestEditor(tandem.url))
    const [alice, bob] = editors
    try {
      for (const e of editors) await e.join(id)
      assert.deepEqual(await alice.insert(id, 0, 'q'), { ok: true })
      await eventually(() => bob.text(id) === 'q')
      assert.equal(bob.received.filter(r => r.event === EVENTS.UPDATE).length, 1)

      const ydoc = alice.ydoc(id)
      /** @type {Uint8Array[]} */
      const burst = []
      const collect = (/** @type {Uint8Array} */ update, /** @type {unknown} */ origin) => { if (origin !== 'remote') burst.push(update) }
      ydoc.on('update', collect)
      for (let i = 0; i < 30; i++) ydoc.getText(TEXT_NAME).insert(1 + i, String(i % 10))
      ydoc.off('update', collect)
      const acks = await Promise.all(burst.map(update => alice.request(EVENTS.UPDATE, { doc: id, update })))
      assert.ok(acks.every(ack => ack.ok))
      const text = alice.text(id)
      await eventually(() => editors.every(e => e.text(id) === text))
      const metrics = await (await fetch(`${tandem.url}/metrics`)).text()
      const merged = Number(/tandem_broadcast_merged_updates_count\{[^}]*\} (\d+)/.exec(metrics)?.[1])
      return { broadcasts: bob.received.filter(r => r.event === EVENTS.UPDATE).length - 1, merged }
    } finally {
      for (const e of editors) e.close()
      await tandem.close()
    }
  }

  it('merges updates that arrive together in a room of 8 editors or more into fewer broadcasts', async () => {
    const { broadcasts, merged } = await burstInRoomOf(8)
    assert.ok(broadcasts < 30, `${broadcasts} broadcasts for 30 updates`)
    assert.ok(merged > 0, 'merged broadcasts counted in /metrics')
  })

  it('sends each update to a room of fewer editors at once, even in a burst', async () => {
    const { broadcasts, merged } = await burstInRoomOf(7)
    assert.equal(broadcasts, 30)
    assert.equal(merged, 0)
  })

  it('sends a room the latest awareness of each client at most once per AWARENESS_INTERVAL_MS', async () => {
    const tandem = await startServer({ awarenessIntervalMs: 200 })
    const { id } = await createSession(tandem.url)
    const [alice, bob] = [new TestEditor(tandem.url), new TestEditor(tandem.url)]
    for (const e of [alice, bob]) await e.join(id)
    const local = new awarenessProtocol.Awareness(new Y.Doc())
    const remote = new awarenessProtocol.Awareness(new Y.Doc())
    const move = (/** @type {number} */ n) => {
      local.setLocalStateField('user', { name: `move ${n}` })
      alice.socket.emit(EVENTS.AWARENESS, { doc: id, update: awarenessProtocol.encodeAwarenessUpdate(local, [local.clientID]) })
    }
    /** @type {number[]} when each awareness message reached Bob */
    const arrivals = []
    bob.socket.on(EVENTS.AWARENESS, ({ update }) => {
      arrivals.push(performance.now())
      awarenessProtocol.applyAwarenessUpdate(remote, new Uint8Array(update), 'server')
      // The moment the first move is out (and its interval open), nine more in one go: they reach
      // the server within a few milliseconds, well inside the 200 ms, and go out as one message.
      if (arrivals.length === 1) for (let n = 2; n <= 10; n++) move(n)
    })
    const messages = () => bob.received.filter(r => r.event === EVENTS.AWARENESS).length

    // The first move of a quiet room goes out at once, and opens the interval.
    move(1)
    await eventually(() => remote.getStates().get(local.clientID)?.user?.name === 'move 10', { what: 'the last move' })
    assert.equal(messages(), 2, 'the first move, then the other nine merged')
    // Sent at once it would follow within a millisecond or two; half the interval leaves room for
    // delivery times that differ on a loaded machine.
    assert.ok(arrivals[1] - arrivals[0] >= 100, `the latest state waited for the interval (${arrivals[1] - arrivals[0]} ms)`)
    local.destroy()
    remote.destroy()
    for (const e of [alice, bob]) e.close()
    await tandem.close()
  })
})

for (const storage of ['embedded', 'redis']) {
  describe(`a join racing the drop of its document (${storage})`, { skip: storage === 'redis' && missing('redis-server') }, () => {
    /** @type {Awaited<ReturnType<typeof startRedis>> | undefined} */
    let redis
    before(async () => { if (storage === 'redis') redis = await startRedis() })
    after(() => redis?.remove())

    /**
     * A server whose seats answer only when `letThrough` is called, so that something can happen to
     * the document while a join waits for its seat.
     */
    async function serverWithHeldSeats () {
      const tandem = await startServer(redis ? { redisUrl: redis.url } : {})
      const seats = tandem.server.backend.seats
      const take = seats.take.bind(seats)
      /** @type {(() => void)[]} */
      const held = []
      let holding = false
      seats.take = async (/** @type {Parameters<typeof take>} */ ...args) => {
        if (holding) await new Promise(resolve => held.push(() => resolve(undefined)))
        return take(...args)
      }
      return {
        tandem,
        hold () { holding = true },
        letThrough () {
          holding = false
          for (const release of held.splice(0)) release()
        },
        /** resolves once a join waits for its seat */
        waiting: () => eventually(() => held.length > 0, { what: 'a join waiting for its seat' })
      }
    }

    it('refuses a join whose copy was reloaded meanwhile; joined again, the editor hears the others', async (t) => {
      const { tandem, hold, letThrough, waiting } = await serverWithHeldSeats()
      t.after(() => tandem.close())
      const session = await createSession(tandem.url, { content: 'x' })
      const [alice, bob] = [new TestEditor(tandem.url), new TestEditor(tandem.url)]
      t.after(() => { alice.close(); bob.close() })
      await alice.join(session.id)
      hold()
      const joining = bob.request(EVENTS.JOIN, { doc: session.id })
      await waiting()
      // What a refused write or an update failing halfway does: the copy is dropped, its editors told to rejoin.
      await tandem.server.registry.invalidate(/** @type {any} */ (tandem.server.registry.get(session.id)))
      letThrough()
      const reply = await joining
      assert.equal(reply.ok, false)
      assert.equal(reply.error.code, 'UNAVAILABLE')
      await eventually(() => alice.received.some(r => r.event === EVENTS.CLOSED))
      await alice.join(session.id)
      await bob.join(session.id)
      assert.deepEqual(await alice.insert(session.id, 0, 'a'), { ok: true })
      await eventually(() => bob.text(session.id) === 'ax', { what: 'bob hears alice' })
      assert.deepEqual(await bob.insert(session.id, 0, 'b'), { ok: true })
      await eventually(() => alice.text(session.id) === 'bax', { what: 'alice hears bob' })
    })

    it('refuses a join whose session was deleted meanwhile', async (t) => {
      const { tandem, hold, letThrough, waiting } = await serverWithHeldSeats()
      t.after(() => tandem.close())
      const session = await createSession(tandem.url, { content: 'x' })
      const bob = new TestEditor(tandem.url)
      t.after(() => bob.close())
      hold()
      const joining = bob.request(EVENTS.JOIN, { doc: session.id })
      await waiting()
      assert.equal((await api(tandem.url, `/api/sessions/${session.id}`, { method: 'DELETE' })).status, 204)
      letThrough()
      const reply = await joining
      assert.equal(reply.ok, false)
      assert.equal(reply.error.code, 'UNAVAILABLE')
      assert.equal((await bob.request(EVENTS.JOIN, { doc: session.id })).error?.code, 'NOT_FOUND')
      if (redis) {
        const client = redis.client()
        t.after(() => client.quit())
        const [, subscribers] = /** @type {[string, number]} */ (await client.call('PUBSUB', 'SHARDNUMSUB', `tandem:{doc:${session.id}}:feed`))
        assert.equal(subscribers, 0, 'no subscription left to the deleted document\'s feed')
      }
    })
  })
}
