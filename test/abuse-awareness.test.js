import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Awareness, applyAwarenessUpdate } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { TestEditor, awarenessUpdate, awarenessUpdates, cursorIn } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { api, startServer } from './helpers/server.js'

// Awareness is drawn by every peer's editor and sent to every joiner: what one viewer puts in it
// must neither break the others' pages nor grow what they are sent, nor outwait the hold on a
// departed editor's cursor. Each test sends what an abusive viewer sent, against a real server.

const AUTH = { authSecret: 'an-awareness-test-secret-of-32-chars!', apiKey: 'awareness-api-key-0123' }
const KEY = { authorization: `Bearer ${AUTH.apiKey}` }
const NO_IP_LIMITS = { connectionsPerMinute: 0, joinsPerMinute: 0, restPerMinute: 0 }
// The defaults, set here so that the counts the tests expect follow from them.
const USER_BYTES = 16384
const USER_IDS = 64

/** @param {Awaited<ReturnType<typeof startServer>>} tandem */
function sessionsOf (tandem) {
  /** @type {TestEditor[]} */
  const editors = []
  return {
    newSession: async () => (await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'awareness' }, headers: KEY })).body.id,
    /** @param {string} session @param {string} user @param {'editor' | 'viewer'} role */
    async editorAs (session, user, role) {
      const res = await api(tandem.url, `/api/sessions/${session}/tokens`, { method: 'POST', body: { user, role }, headers: KEY })
      assert.equal(res.status, 201, JSON.stringify(res.body))
      const editor = new TestEditor(tandem.url, { auth: { token: res.body.token } })
      editors.push(editor)
      return editor
    },
    closeAll: () => { for (const editor of editors) editor.close() }
  }
}

/** @param {TestEditor} editor @param {string} doc @param {Uint8Array} update */
const sendAwareness = (editor, doc, update) => editor.request(EVENTS.AWARENESS, { doc, update })

/** @param {{ ok: boolean, error?: { code: string } }[]} replies */
const codes = replies => replies.map(reply => reply.ok ? 'ok' : reply.error?.code)

describe('awareness from an abusive viewer, on a server with auth on', { timeout: 60000 }, () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {ReturnType<typeof sessionsOf>} */
  let sessions

  before(async () => {
    tandem = await startServer({ ...AUTH, ...NO_IP_LIMITS, maxConnectionsPerUser: 3, maxAwarenessBytesPerUser: USER_BYTES })
    sessions = sessionsOf(tandem)
  })
  after(async () => {
    sessions.closeAll()
    await tandem.close()
  })

  it('refuses a cursor or selection that is not a relative position in the text with INVALID_UPDATE, and relays only the fields editors draw', async () => {
    const id = await sessions.newSession()
    const alice = await sessions.editorAs(id, 'alice', 'editor')
    const victor = await sessions.editorAs(id, 'victor', 'viewer')
    await alice.join(id)
    assert.deepEqual(await alice.insert(id, 0, 'hello'), { ok: true })
    await victor.join(id)
    await eventually(() => victor.text(id) === 'hello')
    const valid = cursorIn(victor.ydoc(id), 1, 3).anchor
    const nowhere = { item: null, type: null, tname: null }
    const user = { name: 'Victor', color: '#268bd2', colorLight: '#268bd233' }
    const hostile = [
      // The state that stopped every peer's carets: a position naming nothing.
      { user, cursor: { anchor: nowhere, head: nowhere } },
      { user, cursor: { anchor: {}, head: valid } },
      { user, cursor: { anchor: valid, head: { tname: 'other', item: null, type: null, assoc: 0 } } },
      { user, cursor: { anchor: valid, head: { ...valid, item: { client: -1, clock: 0 } } } },
      { user, cursor: { anchor: valid, head: { ...valid, item: { client: 1, clock: 0.5 } } } },
      { user, cursor: { anchor: valid, head: { ...valid, item: { client: '1', clock: 0 } } } },
      { user, cursor: { anchor: valid, head: { ...valid, assoc: 'left' } } },
      { user, cursor: { anchor: valid } },
      { user, cursor: 3 },
      { user, cursor: [valid, valid] },
      { user, selection: { anchor: nowhere, head: valid } },
      [user]
    ]
    for (const [i, state] of hostile.entries()) {
      const reply = await sendAwareness(victor, id, awarenessUpdate(900 + i, 1, state))
      assert.equal(reply.error?.code, 'INVALID_UPDATE', `${JSON.stringify(state)}: ${JSON.stringify(reply)}`)
    }
    assert.equal(alice.received.filter(r => r.event === EVENTS.AWARENESS).length, 0, 'nothing was relayed')

    // y-monaco's selection at the end of the text, as Y.relativePositionToJSON writes it (no item).
    const end = Y.relativePositionToJSON(Y.createRelativePositionFromTypeIndex(victor.ydoc(id).getText(TEXT_NAME), 5))
    const sent = { user: { ...user, avatar: 'x'.repeat(500) }, cursor: cursorIn(victor.ydoc(id), 1, 3), selection: { anchor: end, head: end }, pad: 'x'.repeat(2000) }
    assert.deepEqual(await sendAwareness(victor, id, awarenessUpdate(999, 1, sent)), { ok: true })
    await eventually(() => alice.received.some(r => r.event === EVENTS.AWARENESS))
    const seen = new Awareness(alice.ydoc(id))
    try {
      for (const { event, payload } of alice.received) if (event === EVENTS.AWARENESS) applyAwarenessUpdate(seen, new Uint8Array(payload.update), 'server')
      const state = seen.getStates().get(999)
      const full = { type: null, tname: TEXT_NAME, item: null, assoc: 0 }
      assert.deepEqual(state, { user, cursor: cursorIn(victor.ydoc(id), 1, 3), selection: { anchor: full, head: full } })
      // What y-codemirror.next and y-monaco do with each remote position, as it came.
      const at = (/** @type {any} */ position) => Y.createAbsolutePositionFromRelativePosition(position, alice.ydoc(id))?.index
      assert.deepEqual([at(state.cursor.anchor), at(state.cursor.head), at(state.selection.anchor), at(state.selection.head)], [1, 3, 5, 5])
    } finally {
      seen.destroy()
    }
  })

  it('bounds the awareness states of one user in a document at MAX_AWARENESS_BYTES_PER_USER, however many connections it uses', async () => {
    const id = await sessions.newSession()
    const viewers = []
    for (let i = 0; i < 3; i++) viewers.push(await sessions.editorAs(id, 'victor', 'viewer'))
    for (const viewer of viewers) assert.equal((await viewer.join(id)).ok, true)
    // The largest state that passes every check: a name of 64 three-byte characters and four
    // positions of the largest numbers, ~0.9 KB each.
    const far = { type: { client: Number.MAX_SAFE_INTEGER, clock: Number.MAX_SAFE_INTEGER }, tname: TEXT_NAME, item: { client: Number.MAX_SAFE_INTEGER, clock: Number.MAX_SAFE_INTEGER }, assoc: -Number.MAX_SAFE_INTEGER }
    const state = { user: { name: '字'.repeat(64), color: '#268bd2', colorLight: '#268bd2ff' }, cursor: { anchor: far, head: far }, selection: { anchor: far, head: far } }
    const replies = []
    for (const [v, viewer] of viewers.entries()) {
      for (let i = 0; i < 16; i++) replies.push(await sendAwareness(viewer, id, awarenessUpdate(5000 + v * 100 + i, 1, state)))
    }
    const fit = Math.floor(USER_BYTES / Buffer.byteLength(JSON.stringify(state)))
    assert.ok(fit < 48)
    assert.deepEqual(codes(replies), [...Array(fit).fill('ok'), ...Array(48 - fit).fill('TOO_LARGE')])

    const alice = await sessions.editorAs(id, 'alice', 'editor')
    const joined = await alice.join(id)
    assert.ok(joined.awareness.byteLength <= USER_BYTES + 48 * 16, `${joined.awareness.byteLength} bytes of awareness in a join reply`)
    assert.deepEqual(await sendAwareness(alice, id, awarenessUpdate(6000, 1, state)), { ok: true }, 'another user has a budget of its own')
    // Freeing space makes room again.
    assert.deepEqual(await sendAwareness(viewers[0], id, awarenessUpdate(5000, 2, null)), { ok: true })
    assert.deepEqual(await sendAwareness(viewers[2], id, awarenessUpdate(5200, 1, state)), { ok: true })
  })
})

describe('cursor ids held for a departed editor, on a server with auth on', { timeout: 60000 }, () => {
  /**
   * Announces and clears fresh ids, a connection's worth per message, as a viewer flushing the
   * holds would; returns each message's reply.
   * @param {TestEditor} editor @param {string} doc @param {number} rounds @param {number} first id
   */
  async function churn (editor, doc, rounds, first) {
    const replies = []
    for (let round = 0; round < rounds; round++) {
      const ids = Array.from({ length: 16 }, (_, i) => first + round * 16 + i)
      const update = awarenessUpdates([...ids.map(c => /** @type {[number, number, unknown]} */ ([c, 1, { user: { name: 'v' } }])), ...ids.map(c => /** @type {[number, number, unknown]} */ ([c, 2, null]))])
      replies.push(await sendAwareness(editor, doc, update))
    }
    return replies
  }

  it('keeps a departed editor\'s cursor id held however many ids a viewer announces and clears: past MAX_AWARENESS_IDS_PER_USER they are refused', async (t) => {
    const tandem = await startServer({ ...AUTH, ...NO_IP_LIMITS, awarenessPerSecond: 0, maxAwarenessIdsPerUser: USER_IDS })
    const sessions = sessionsOf(tandem)
    t.after(async () => { sessions.closeAll(); await tandem.close() })
    const id = await sessions.newSession()
    const alice = await sessions.editorAs(id, 'alice', 'editor')
    const victor = await sessions.editorAs(id, 'victor', 'viewer')
    await alice.join(id)
    await victor.join(id)
    const cursor = { user: { name: 'Alice', color: '#d33682' } }
    assert.deepEqual(await sendAwareness(alice, id, awarenessUpdate(4242, 1, cursor)), { ok: true })
    alice.close()
    await eventually(() => tandem.server.registry.editorCount(id) === 1)

    // 264 messages of 16 fresh ids each: 4,224 ids, more than any fixed list of holds would keep.
    const replies = await churn(victor, id, 264, 100_000)
    const allowed = USER_IDS / 16
    assert.deepEqual(codes(replies), [...Array(allowed).fill('ok'), ...Array(264 - allowed).fill('RATE_LIMITED')])
    const claim = await sendAwareness(victor, id, awarenessUpdate(4242, 3, cursor))
    assert.equal(claim.error?.code, 'FORBIDDEN', JSON.stringify(claim))
    const doc = /** @type {import('../server/documents/live-doc.js').LiveDoc} */ (tandem.server.registry.get(id))
    assert.equal(doc.awareness.held, USER_IDS + 1, 'the viewer\'s ids and alice\'s')
    const again = await sessions.editorAs(id, 'victor', 'viewer')
    await again.join(id)
    assert.equal((await churn(again, id, 1, 900_000))[0].error?.code, 'RATE_LIMITED', 'the bound is the user\'s, not the connection\'s')
    const back = await sessions.editorAs(id, 'alice', 'editor')
    await back.join(id)
    assert.deepEqual(await sendAwareness(back, id, awarenessUpdate(4242, 3, cursor)), { ok: true }, 'alice takes her id back')
  })

  it('gives a user its cursor ids back once AWARENESS_ID_HOLD_MS has passed', async (t) => {
    const tandem = await startServer({ ...AUTH, ...NO_IP_LIMITS, awarenessPerSecond: 0, awarenessIdHoldMs: 2000, maxAwarenessIdsPerUser: USER_IDS })
    const sessions = sessionsOf(tandem)
    t.after(async () => { sessions.closeAll(); await tandem.close() })
    const id = await sessions.newSession()
    const victor = await sessions.editorAs(id, 'victor', 'viewer')
    await victor.join(id)
    const allowed = USER_IDS / 16
    const start = performance.now()
    assert.deepEqual(codes(await churn(victor, id, allowed + 1, 100_000)), [...Array(allowed).fill('ok'), 'RATE_LIMITED'])
    let next = 200_000
    const fresh = async () => {
      next += 16
      return (await churn(victor, id, 1, next))[0].ok
    }
    await eventually(fresh, { timeoutMs: 10000, intervalMs: 50, what: 'fresh ids accepted again' })
    assert.ok(performance.now() - start >= 2000, `accepted again after ${Math.round(performance.now() - start)} ms, within the hold`)
  })
})

describe('awareness bytes with auth off', () => {
  it('counts each connection as its own guest, so a room of many pages is not one user\'s budget', async () => {
    const tandem = await startServer({ ...NO_IP_LIMITS, maxAwarenessBytesPerUser: 512, maxAwarenessStateBytes: 512 })
    const { id } = (await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'guests' } })).body
    const state = { user: { name: 'g'.repeat(64), color: '#268bd2' }, cursor: null }
    const guests = Array.from({ length: 5 }, () => new TestEditor(tandem.url))
    for (const guest of guests) assert.equal((await guest.join(id)).ok, true)
    // Three states of ~100 bytes each per connection: 1.5 KB in all, past what one guest may hold.
    const replies = []
    for (const [g, guest] of guests.entries()) {
      for (let i = 0; i < 3; i++) replies.push(await sendAwareness(guest, id, awarenessUpdate(100 * g + i, 1, state)))
    }
    assert.deepEqual(codes(replies), Array(15).fill('ok'))
    const more = await sendAwareness(guests[0], id, awarenessUpdates([[10, 1, state], [11, 1, state]]))
    assert.equal(more.error?.code, 'TOO_LARGE', 'one connection is still bounded')
    for (const guest of guests) guest.close()
    await tandem.close()
  })
})
