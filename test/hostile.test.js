import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { api, contentOf, createSession, manualClock, startServer } from './helpers/server.js'

// Floods from clients that ignore every refusal. In each case the server stays up and answers,
// honest editors see no effect, and the document holds exactly what was accepted.

describe('floods', () => {
  it('an update flood is held to the rate; only accepted updates reach anyone', async (t) => {
    // The rate's clock stands still: the bucket holds one second's worth (UPDATES_PER_SECOND, 100),
    // and no refill during the flood, however long its 3,000 ACKs take on this machine. The flooder
    // is kept connected to count its refusals (MAX_INVALID_UPDATES would close it).
    const clock = manualClock()
    const tandem = await startServer({ maxInvalidUpdates: 0 }, { now: clock.now })
    const { id } = await createSession(tandem.url)
    const [alice, flooder] = [new TestEditor(tandem.url), new TestEditor(tandem.url)]
    await alice.join(id)
    await flooder.join(id)

    // 3,000 updates sent without waiting: valid keystrokes interleaved with garbage.
    const ydoc = new Y.Doc()
    /** @type {Uint8Array[]} */
    const keystrokes = []
    ydoc.on('update', (/** @type {Uint8Array} */ update) => keystrokes.push(update))
    for (let i = 0; i < 1500; i++) ydoc.getText(TEXT_NAME).insert(i, 'k')
    const sent = keystrokes.flatMap((update, i) => [update, Uint8Array.of(i % 256, 255, 1, 2)])
    const replies = await Promise.all(sent.map(update => flooder.socket.timeout(20000).emitWithAck(EVENTS.UPDATE, { doc: id, update })))
    const codes = new Map()
    for (const reply of replies) codes.set(reply.ok ? 'ok' : reply.error.code, (codes.get(reply.ok ? 'ok' : reply.error.code) ?? 0) + 1)
    const accepted = codes.get('ok') ?? 0
    t.diagnostic(`${sent.length} updates sent at once: ${[...codes].map(([code, n]) => `${code} ${n}`).join(', ')}`)
    // The first 100 take the tokens: 50 keystrokes, each building on the one before, and 50 garbage.
    assert.deepEqual(Object.fromEntries(codes), { ok: 50, INVALID_UPDATE: 50, RATE_LIMITED: 2900 })

    // The honest editor still edits at once, and sees exactly the accepted keystrokes.
    assert.deepEqual(await alice.insert(id, 0, '>'), { ok: true })
    const text = await contentOf(tandem.url, id)
    assert.equal(text, `>${'k'.repeat(accepted)}`)
    await eventually(() => alice.text(id) === text)
    assert.equal((await api(tandem.url, '/api/health')).status, 200)
    for (const e of [alice, flooder]) e.close()
    await tandem.close()
  })

  it('a join flood from many connections is refused past the limits and leaves no seat taken', async (t) => {
    const tandem = await startServer({ maxConnectionsPerIp: 30, joinsPerMinute: 100 })
    const { id } = await createSession(tandem.url, { maxEditors: 1000 })
    const alice = new TestEditor(tandem.url)
    await alice.join(id)
    const crowd = Array.from({ length: 40 }, () => new TestEditor(tandem.url))
    const outcomes = await Promise.all(crowd.map(e => e.connected().then(() => 'connected', (/** @type {any} */ err) => err.data?.code)))
    const connected = outcomes.map(outcome => outcome === 'connected')
    assert.equal(connected.filter(Boolean).length, 29, 'alice holds the 30th seat')
    assert.deepEqual(outcomes.filter(outcome => outcome !== 'connected'), Array(11).fill('RATE_LIMITED'))
    const joins = await Promise.all(crowd.filter((_, i) => connected[i]).flatMap(e => [0, 1, 2, 3, 4].map(() => e.request(EVENTS.JOIN, { doc: id }))))
    const ok = joins.filter(reply => reply.ok).length
    t.diagnostic(`40 connections: ${connected.filter(Boolean).length} admitted; ${joins.length} joins: ${ok} ok, ${joins.length - ok} RATE_LIMITED`)
    assert.equal(ok + joins.filter(reply => reply.error?.code === 'RATE_LIMITED').length, joins.length)
    // Alice's join took one of the 100 a minute; a socket's repeated joins of one document take no seat.
    assert.ok(ok > 0 && ok <= 99, `${ok} joins passed`)
    for (const e of crowd) e.close()
    await eventually(() => tandem.server.registry.editorCount(id) === 1)
    assert.deepEqual(await alice.insert(id, 0, 'still fine'), { ok: true })
    alice.close()
    await tandem.close()
  })
})
