import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as Y from 'yjs'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { ConfigError, loadConfig } from '../server/config.js'
import { KEYFRAME_EVERY, compactHistory } from '../server/documents/history-compaction.js'
import { MAX_CHECKPOINTS } from '../server/sessions/history-service.js'
import { minuteEnd } from '../server/storage/history-store.js'
import { startChildServer } from './helpers/child-server.js'
import { TestEditor, awarenessUpdate, typeUntilKilled } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { missing } from './helpers/processes.js'
import { startRedis } from './helpers/redis.js'
import { api, createSession, startServer, tempDataDir } from './helpers/server.js'

const AUTH_SECRET = 'a-test-secret-that-is-at-least-32-characters'
const API_KEY = 'a-test-api-key-of-some-length'
const KEY = { authorization: `Bearer ${API_KEY}` }
const MINUTE = 60000
const DAY = 24 * 3600 * 1000

/** The real clock, moved on by hand: history's times are the server's `now`. */
function movableClock () {
  let offset = 0
  return {
    now: () => Date.now() + offset,
    /** @param {number} ms */
    advance (ms) { offset += ms }
  }
}

const MODES = [
  { mode: 'embedded LevelDB', redis: false },
  { mode: 'Redis', redis: true }
]

for (const { mode, redis } of MODES) {
  describe(`history (${mode})`, { skip: redis && missing('redis-server') }, () => {
    /** @type {Awaited<ReturnType<typeof startRedis>> | undefined} */
    let redisServer
    before(async () => { if (redis) redisServer = await startRedis() })
    after(async () => { await redisServer?.remove() })

    /**
     * A server with auth on and history kept, on the given clock.
     * @param {ReturnType<typeof movableClock>} clock @param {Partial<import('../server/config.js').Config>} [overrides]
     */
    async function historyServer (clock, overrides = {}) {
      const tandem = await startServer({
        authSecret: AUTH_SECRET,
        apiKey: API_KEY,
        historyRetentionMs: 30 * DAY,
        redisUrl: redisServer?.url ?? '',
        ...overrides
      }, { now: clock.now })
      const get = (/** @type {string} */ path) => api(tandem.url, path, { headers: KEY })
      /** @param {string} id @param {string} user @param {'editor' | 'viewer'} [role] */
      const tokenFor = async (id, user, role = 'editor') => {
        const res = await api(tandem.url, `/api/sessions/${id}/tokens`, { method: 'POST', body: { user, role }, headers: KEY })
        return /** @type {string} */ (res.body.token)
      }
      /** @param {string} id @param {string} user */
      const editorFor = async (id, user) => {
        const editor = new TestEditor(tandem.url, { auth: { token: await tokenFor(id, user) } })
        const joined = await editor.join(id)
        assert.equal(joined.ok, true)
        return editor
      }
      /** @param {string} id @param {number} at */
      const textAt = (id, at) => get(`/api/sessions/${id}/content?at=${new Date(at).toISOString()}`)
      return { tandem, get, tokenFor, editorFor, textAt }
    }

    /** @param {string} url */
    const newSession = (url) => api(url, '/api/sessions', { method: 'POST', body: { name: 'history.js' }, headers: KEY }).then(res => res.body)

    it('returns the text exactly as it was at past moments, edited by two named editors', async () => {
      const clock = movableClock()
      const { tandem, textAt, editorFor, get } = await historyServer(clock)
      const session = await newSession(tandem.url)
      const ada = await editorFor(session.id, 'ada')
      const bob = await editorFor(session.id, 'bob')
      /** @type {{ at: number, text: string }[]} */
      const moments = []
      const edits = [
        () => ada.insert(session.id, 0, 'hello'),
        () => bob.edit(session.id, text => text.insert(text.length, ' world')),
        () => ada.edit(session.id, text => text.delete(0, 1)),
        () => bob.edit(session.id, text => text.insert(0, 'H'))
      ]
      for (const edit of edits) {
        clock.advance(MINUTE)
        assert.deepEqual(await edit(), { ok: true })
        moments.push({ at: clock.now(), text: ada.text(session.id) })
      }
      await waitForText(bob, session.id, 'Hello world')
      for (const { at, text } of moments) {
        const res = await textAt(session.id, at)
        assert.equal(res.status, 200)
        assert.equal(res.body, text, `at ${new Date(at).toISOString()}`)
      }
      // Just before the first edit the document was empty.
      assert.equal((await textAt(session.id, moments[0].at - MINUTE / 2)).body, '')
      const asYjs = await get(`/api/sessions/${session.id}/content?at=${new Date(moments[1].at).toISOString()}&format=yjs`)
      const rebuilt = new Y.Doc()
      Y.applyUpdate(rebuilt, asYjs.body)
      assert.equal(rebuilt.getText(TEXT_NAME).toString(), moments[1].text)

      const history = await get(`/api/sessions/${session.id}/history`)
      assert.equal(history.status, 200)
      assert.deepEqual(history.body.buckets.map((/** @type {any} */ bucket) => [bucket.editors, bucket.added, bucket.removed, bucket.updates]), [
        [['ada'], 5, 0, 1],
        [['bob'], 6, 0, 1],
        [['ada'], 0, 1, 1],
        [['bob'], 1, 0, 1]
      ])
      assert.equal(history.body.retainedFrom, session.createdAt)
      ada.close()
      bob.close()
      await tandem.close()
    })

    // Two processes share storage only through Redis.
    if (redis) {
      it('keeps one history of the updates two processes store, each with its editor, when they share Redis', async () => {
        const clock = movableClock()
        const first = await historyServer(clock)
        const second = await historyServer(clock)
        const session = await newSession(first.tandem.url)
        const ada = await first.editorFor(session.id, 'ada')
        const bob = await second.editorFor(session.id, 'bob')
        /** @type {{ at: number, text: string }[]} */
        const moments = []
        for (let i = 0; i < 6; i++) {
          clock.advance(MINUTE)
          const [typist, other] = i % 2 === 0 ? [ada, bob] : [bob, ada]
          assert.deepEqual(await typist.edit(session.id, text => text.insert(text.length, String(i))), { ok: true })
          await waitForText(other, session.id, typist.text(session.id))
          moments.push({ at: clock.now(), text: typist.text(session.id) })
        }
        for (const server of [first, second]) {
          for (const { at, text } of moments) assert.equal((await server.textAt(session.id, at)).body, text)
        }
        const history = await second.get(`/api/sessions/${session.id}/history`)
        assert.deepEqual(history.body.buckets.map((/** @type {any} */ bucket) => bucket.editors), [['ada'], ['bob'], ['ada'], ['bob'], ['ada'], ['bob']])
        ada.close()
        bob.close()
        await first.tandem.close()
        await second.tandem.close()
      })
    }

    it('refuses a time to come, an unparsable one, and one before history holds, changing nothing', async () => {
      const clock = movableClock()
      const { tandem, textAt, get } = await historyServer(clock)
      const session = await newSession(tandem.url)
      assert.equal((await textAt(session.id, clock.now() + MINUTE)).body.error.code, 'BAD_REQUEST')
      assert.equal((await get(`/api/sessions/${session.id}/content?at=yesterday`)).body.error.code, 'BAD_REQUEST')
      const before = await textAt(session.id, Date.parse(session.createdAt) - MINUTE)
      assert.equal(before.status, 410)
      assert.equal(before.body.error.code, 'HISTORY_GONE')
      assert.equal(before.body.error.details.retainedFrom, session.createdAt)
      await tandem.close()
    })

    it('names checkpoints for editors and the API key, and serves their text past retention', async () => {
      const clock = movableClock()
      const { tandem, tokenFor, editorFor, get } = await historyServer(clock, { historyRetentionMs: 3600 * 1000 })
      const session = await newSession(tandem.url)
      const ada = await editorFor(session.id, 'ada')
      await ada.insert(session.id, 0, 'first draft')
      const adaToken = await tokenFor(session.id, 'ada')
      const viewer = await tokenFor(session.id, 'val', 'viewer')
      const post = (/** @type {string} */ token, /** @type {unknown} */ body) =>
        api(tandem.url, `/api/sessions/${session.id}/checkpoints`, { method: 'POST', body, headers: { authorization: `Bearer ${token}` } })
      assert.equal((await post(adaToken, { name: '🎉 v1' })).status, 201)
      clock.advance(1000)
      const created = await post(adaToken, { name: 'draft' })
      assert.equal(created.status, 201)
      assert.equal(created.body.name, 'draft')
      assert.match(created.body.revision, /^[\w-]{22}$/)
      assert.equal((await post(adaToken, { name: 'draft' })).body.error.code, 'BAD_REQUEST')
      assert.equal((await post(viewer, { name: 'other' })).body.error.code, 'FORBIDDEN')
      assert.equal((await post(API_KEY, { name: '' })).body.error.code, 'BAD_REQUEST')

      await ada.edit(session.id, text => text.delete(0, 6))
      clock.advance(3 * 3600 * 1000)
      await tandem.server.history.compact(session.id)
      const kept = await get(`/api/sessions/${session.id}/content?checkpoint=draft`)
      assert.equal(kept.body, 'first draft')
      assert.equal((await get(`/api/sessions/${session.id}/content?checkpoint=nope`)).body.error.code, 'NOT_FOUND')
      const history = await get(`/api/sessions/${session.id}/history`)
      assert.deepEqual(history.body.checkpoints.map((/** @type {any} */ c) => [c.name, c.by]), [['🎉 v1', 'ada'], ['draft', 'ada']])
      // A viewer reads history, and the text of a checkpoint.
      const asViewer = { authorization: `Bearer ${viewer}` }
      assert.equal((await api(tandem.url, `/api/sessions/${session.id}/history`, { headers: asViewer })).status, 200)
      assert.equal((await api(tandem.url, `/api/sessions/${session.id}/content?checkpoint=${encodeURIComponent('🎉 v1')}`, { headers: asViewer })).body, 'first draft')
      assert.equal((await api(tandem.url, `/api/sessions/${session.id}/checkpoints`, { method: 'POST', raw: '{"name":', headers: KEY })).body.error.code, 'BAD_REQUEST')
      ada.close()
      await tandem.close()
    })

    it('folds old updates into minutes, still exact at minute boundaries, and drops what is past retention', async () => {
      const clock = movableClock()
      const { tandem, textAt, editorFor, get } = await historyServer(clock, { historyRetentionMs: 3 * 3600 * 1000, historyKeystrokesMs: 3600 * 1000 })
      const session = await newSession(tandem.url)
      const ada = await editorFor(session.id, 'ada')
      /** @type {{ boundary: number, text: string }[]} */
      const minutes = []
      for (let minute = 0; minute < 5; minute++) {
        clock.advance(MINUTE)
        for (let key = 0; key < 4; key++) await ada.insert(session.id, ada.text(session.id).length, String.fromCharCode(97 + minute))
        minutes.push({ boundary: minuteEnd(clock.now()), text: ada.text(session.id) })
      }
      // Two hours on: every update above is older than the keystroke window.
      clock.advance(2 * 3600 * 1000)
      await tandem.server.history.compact(session.id)
      for (const { boundary, text } of minutes) assert.equal((await textAt(session.id, boundary)).body, text)
      const overview = await get(`/api/sessions/${session.id}/history`)
      assert.deepEqual(overview.body.buckets.map((/** @type {any} */ bucket) => [bucket.updates, bucket.added, bucket.editors]),
        minutes.map(() => [4, 4, ['ada']]))
      const updates = await get(`/api/sessions/${session.id}/history/updates?from=${session.createdAt}`)
      assert.ok(updates.body.steps.every((/** @type {any} */ step) => step.minute === true))

      // Two more hours: the first minutes are past retention.
      clock.advance(2 * 3600 * 1000)
      await tandem.server.history.compact(session.id)
      const gone = await textAt(session.id, minutes[0].boundary)
      assert.equal(gone.body.error.code, 'HISTORY_GONE')
      const retainedFrom = Date.parse(gone.body.error.details.retainedFrom)
      assert.ok(retainedFrom > minutes[4].boundary)
      assert.equal((await textAt(session.id, retainedFrom)).body, minutes[4].text)
      assert.equal((await textAt(session.id, clock.now())).body, minutes[4].text)
      ada.close()
      await tandem.close()
    })

    it('gives a playback the state at its start, then each update with its time and author, page by page', async () => {
      const clock = movableClock()
      const { tandem, editorFor, get } = await historyServer(clock)
      const session = await newSession(tandem.url)
      const ada = await editorFor(session.id, 'ada')
      const bob = await editorFor(session.id, 'bob')
      await ada.insert(session.id, 0, 'ab')
      clock.advance(1000)
      const from = clock.now()
      const typists = [ada, bob, ada, bob, ada]
      for (const [i, typist] of typists.entries()) {
        clock.advance(1000)
        await typist.edit(session.id, text => text.insert(text.length, String(i)))
      }
      await waitForText(ada, session.id, 'ab01234')
      const ydoc = new Y.Doc()
      /** @type {any[]} */
      const steps = []
      let page = await get(`/api/sessions/${session.id}/history/updates?from=${new Date(from).toISOString()}&limit=2`)
      assert.equal(page.status, 200)
      Y.applyUpdate(ydoc, Buffer.from(page.body.state, 'base64'))
      assert.equal(ydoc.getText(TEXT_NAME).toString(), 'ab')
      for (let pages = 0; pages < 10; pages++) {
        steps.push(...page.body.steps)
        if (page.body.next === null) break
        page = await get(`/api/sessions/${session.id}/history/updates?from=${page.body.next}&limit=2`)
      }
      assert.deepEqual(steps.map(step => step.by), ['ada', 'bob', 'ada', 'bob', 'ada'])
      const texts = steps.map(step => {
        Y.applyUpdate(ydoc, Buffer.from(step.update, 'base64'))
        return ydoc.getText(TEXT_NAME).toString()
      })
      assert.deepEqual(texts, ['ab0', 'ab01', 'ab012', 'ab0123', 'ab01234'])
      ada.close()
      bob.close()
      await tandem.close()
    })

    it('keeps a keyframe every KEYFRAME_EVERY updates, and past HISTORY_MAX_BYTES moves where history starts', async () => {
      const clock = movableClock()
      const { tandem, textAt } = await historyServer(clock)
      const session = await newSession(tandem.url)
      const start = Date.parse(session.createdAt) + 1000
      // Explicit times, through the store's own append: 5000 keystrokes, one append per 100 ms.
      const typist = new Y.Doc()
      const text = typist.getText(TEXT_NAME)
      /** @type {{ at: number, text: string }[]} */
      const moments = []
      for (let i = 0; i < 5000; i++) {
        /** @type {Uint8Array[]} */
        const updates = []
        typist.once('update', (/** @type {Uint8Array} */ update) => updates.push(update))
        if (i % 6 === 5) text.delete(text.length - 1, 1)
        else text.insert(text.length, 'abcdefghij'[i % 10])
        const at = start + i * 100
        await tandem.server.backend.docStore.append(session.id, updates, null, { at, by: ['ada'] })
        if (i % 500 === 250) moments.push({ at, text: text.toString() })
      }
      clock.advance(start + 5000 * 100 - clock.now() + MINUTE)
      const store = tandem.server.backend.historyStore
      const limits = { retentionMs: 30 * DAY, keystrokesMs: 3600 * 1000, maxBytes: 64 * 1024 * 1024 }
      await compactHistory(store, session.id, clock.now(), limits)
      // One after every KEYFRAME_EVERY updates, none after the last.
      const keyframes = Array.from({ length: Math.ceil(5000 / KEYFRAME_EVERY) - 1 }, (_, k) => start + ((k + 1) * KEYFRAME_EVERY - 1) * 100)
      assert.ok(keyframes.length >= 2)
      assert.deepEqual(await store.keyframeTimes(session.id, -1, clock.now()), keyframes)
      for (const { at, text: expected } of moments) assert.equal((await textAt(session.id, at)).body, expected)

      await flushed(tandem)
      const bytes = await store.bytes(session.id)
      assert.ok(bytes > 0)
      // Half of what it takes now: the oldest part must go.
      await compactHistory(store, session.id, clock.now(), { ...limits, maxBytes: bytes / 2 })
      const base = await store.base(session.id)
      assert.ok(base && base.at >= keyframes[0], 'the base moved past the oldest updates')
      for (const { at, text: expected } of moments) {
        const res = await textAt(session.id, at)
        if (at < /** @type {{ at: number }} */ (base).at) assert.equal(res.body.error.code, 'HISTORY_GONE')
        else assert.equal(res.body, expected)
      }
      assert.equal((await textAt(session.id, clock.now())).body, text.toString())
      await tandem.close()
    })

    it('restores an earlier text or a checkpoint as a new edit every editor receives, keeping the history after it', async () => {
      const clock = movableClock()
      const { tandem, textAt, editorFor, tokenFor, get } = await historyServer(clock)
      const session = await newSession(tandem.url)
      const ada = await editorFor(session.id, 'ada')
      const bob = await editorFor(session.id, 'bob')
      clock.advance(MINUTE)
      assert.deepEqual(await ada.insert(session.id, 0, 'fn main() {}\n'), { ok: true })
      const early = clock.now()
      const named = await api(tandem.url, `/api/sessions/${session.id}/checkpoints`, { method: 'POST', body: { name: 'first draft' }, headers: KEY })
      assert.equal(named.status, 201)
      clock.advance(MINUTE)
      assert.deepEqual(await bob.edit(session.id, text => text.delete(0, text.length)), { ok: true })
      assert.deepEqual(await bob.insert(session.id, 0, 'rm -rf /\n'), { ok: true })
      const late = clock.now()
      await waitForText(ada, session.id, 'rm -rf /\n')

      clock.advance(MINUTE)
      const viewer = await tokenFor(session.id, 'vic', 'viewer')
      const refused = await api(tandem.url, `/api/sessions/${session.id}/restore`, { method: 'POST', body: { at: new Date(early).toISOString() }, headers: { authorization: `Bearer ${viewer}` } })
      assert.equal(refused.status, 403)
      assert.equal(refused.body.error.code, 'FORBIDDEN')
      const restored = await api(tandem.url, `/api/sessions/${session.id}/restore`, { method: 'POST', body: { at: new Date(early).toISOString() }, headers: { authorization: `Bearer ${await tokenFor(session.id, 'ada')}` } })
      assert.equal(restored.status, 200)
      assert.equal(restored.body.length, 'fn main() {}\n'.length)
      await waitForText(ada, session.id, 'fn main() {}\n')
      await waitForText(bob, session.id, 'fn main() {}\n')
      assert.equal((await get(`/api/sessions/${session.id}/content`)).body, 'fn main() {}\n')
      assert.equal((await textAt(session.id, late)).body, 'rm -rf /\n', 'what came after the restored moment is still in history')
      const buckets = (await get(`/api/sessions/${session.id}/history`)).body.buckets
      assert.deepEqual(buckets.at(-1).editors, ['ada'], 'the restore is recorded as ada\'s edit')

      assert.deepEqual(await bob.insert(session.id, 0, '// ok\n'), { ok: true })
      const back = await api(tandem.url, `/api/sessions/${session.id}/restore`, { method: 'POST', body: { checkpoint: 'first draft' }, headers: KEY })
      assert.equal(back.status, 200)
      await waitForText(bob, session.id, 'fn main() {}\n')

      for (const [body, status, code] of [
        [{ checkpoint: 'no such one' }, 404, 'NOT_FOUND'],
        [{ at: new Date(early).toISOString(), checkpoint: 'first draft' }, 400, 'BAD_REQUEST'],
        [{}, 400, 'BAD_REQUEST'],
        [{ at: new Date(clock.now() + DAY).toISOString() }, 400, 'BAD_REQUEST'],
        [{ at: new Date(session.createdAt).getTime() - DAY }, 400, 'BAD_REQUEST']
      ]) {
        const res = await api(tandem.url, `/api/sessions/${session.id}/restore`, { method: 'POST', body, headers: KEY })
        assert.equal(res.status, status, JSON.stringify(body))
        assert.equal(res.body.error.code, code)
      }
      const gone = await api(tandem.url, `/api/sessions/${session.id}/restore`, { method: 'POST', body: { at: new Date(Date.parse(session.createdAt) - DAY).toISOString() }, headers: KEY })
      assert.equal(gone.status, 410)
      assert.equal(gone.body.error.code, 'HISTORY_GONE')
      assert.equal((await get(`/api/sessions/${session.id}/content`)).body, 'fn main() {}\n', 'a refused restore changed nothing')
      ada.close()
      bob.close()
      await tandem.close()
    })

    it('refuses a checkpoint past MAX_CHECKPOINTS per session, keeping those it holds', async () => {
      const clock = movableClock()
      const { tandem, get } = await historyServer(clock)
      const session = await newSession(tandem.url)
      const name = (/** @type {number} */ i) => api(tandem.url, `/api/sessions/${session.id}/checkpoints`, { method: 'POST', body: { name: `v${i}` }, headers: KEY })
      for (let i = 0; i < MAX_CHECKPOINTS; i++) assert.equal((await name(i)).status, 201)
      const refused = await name(MAX_CHECKPOINTS)
      assert.equal(refused.status, 400)
      assert.equal(refused.body.error.code, 'BAD_REQUEST')
      assert.equal((await get(`/api/sessions/${session.id}/history`)).body.checkpoints.length, MAX_CHECKPOINTS)
      await tandem.close()
    })

    it('removes a session\'s history and checkpoints with the session', async () => {
      const clock = movableClock()
      const { tandem, editorFor } = await historyServer(clock)
      const session = await newSession(tandem.url)
      const ada = await editorFor(session.id, 'ada')
      await ada.insert(session.id, 0, 'soon gone')
      await api(tandem.url, `/api/sessions/${session.id}/checkpoints`, { method: 'POST', body: { name: 'cp' }, headers: KEY })
      assert.ok((await historyKeys(tandem, session.id)).length > 0)
      ada.close()
      assert.equal((await api(tandem.url, `/api/sessions/${session.id}`, { method: 'DELETE', headers: KEY })).status, 204)
      assert.deepEqual(await historyKeys(tandem, session.id), [])
      await tandem.close()
    })

    it('writes no history at all with HISTORY_RETENTION=0, and answers HISTORY_GONE for a past time', async () => {
      const clock = movableClock()
      const { tandem, editorFor, textAt } = await historyServer(clock, { historyRetentionMs: 0 })
      const session = await createSession(tandem.url, { name: 'plain.txt', content: 'seed' }).catch(() => newSession(tandem.url))
      const ada = await editorFor(session.id, 'ada')
      await ada.insert(session.id, 0, 'no history ')
      await tandem.server.registry.get(session.id)?.settled()
      assert.deepEqual(await historyKeys(tandem, session.id), [])
      assert.equal((await textAt(session.id, clock.now())).body.error.code, 'HISTORY_GONE')
      ada.close()
      await tandem.close()
    })

    it('starts history where it was turned on for a document with edits, and refuses earlier times rather than answer without those edits', async () => {
      const clock = movableClock()
      const data = redis ? null : await tempDataDir()
      const storage = data ? { dataDir: data.dir } : {}
      const before = await historyServer(clock, { historyRetentionMs: 0, ...storage })
      const session = await newSession(before.tandem.url)
      const ada = await before.editorFor(session.id, 'ada')
      assert.deepEqual(await ada.insert(session.id, 0, 'kept before history\n'), { ok: true })
      ada.close()
      await before.tandem.close()

      clock.advance(MINUTE)
      const turnedOn = clock.now()
      const after = await historyServer(clock, storage)
      const bob = await after.editorFor(session.id, 'bob')
      await eventually(async () => (await after.get(`/api/sessions/${session.id}/history`)).body.retainedFrom !== session.createdAt, { what: 'history started at the load' })
      const { retainedFrom } = (await after.get(`/api/sessions/${session.id}/history`)).body
      assert.ok(Date.parse(retainedFrom) >= turnedOn - 1 && Date.parse(retainedFrom) <= clock.now(), retainedFrom)
      clock.advance(MINUTE)
      const loaded = clock.now()
      clock.advance(MINUTE)
      assert.deepEqual(await bob.insert(session.id, 0, '// bob\n'), { ok: true })
      assert.equal((await after.textAt(session.id, loaded)).body, 'kept before history\n')
      assert.equal((await after.textAt(session.id, clock.now())).body, '// bob\nkept before history\n')
      const earlier = await after.textAt(session.id, turnedOn - MINUTE / 2)
      assert.equal(earlier.status, 410)
      assert.equal(earlier.body.error.code, 'HISTORY_GONE')
      bob.close()
      await after.tandem.close()
      await data?.remove()
    })

    it('keeps no history entry of an update storage refused', async () => {
      const clock = movableClock()
      const { tandem, editorFor, get } = await historyServer(clock)
      const session = await newSession(tandem.url)
      const ada = await editorFor(session.id, 'ada')
      await ada.insert(session.id, 0, 'kept')
      const refused = await refusedByStorage(tandem, redisServer, () => ada.insert(session.id, 4, ' lost'))
      assert.equal(refused.ok, false)
      const history = await get(`/api/sessions/${session.id}/history`)
      assert.deepEqual(history.body.buckets.map((/** @type {any} */ bucket) => bucket.updates), [1])
      assert.equal((await textAt(get, session.id, clock.now())).body, 'kept')
      ada.close()
      await tandem.close()
    })
  })
}

describe('history through a crash (embedded LevelDB)', () => {
  it('keeps every acknowledged update in history when the server is killed with SIGKILL right after the ACKs', async (t) => {
    const data = await tempDataDir()
    t.after(() => data.remove())
    const env = { DATA_DIR: data.dir, HISTORY_RETENTION: '30d', UPDATES_PER_SECOND: '0' }
    let server = await startChildServer(env)
    const session = await createSession(server.url)
    const alice = new TestEditor(server.url)
    await alice.join(session.id)
    // Auth off: the author is the name the editor's awareness shows.
    const state = { user: { name: 'Guest Ada', color: '#268bd2' } }
    assert.deepEqual(await alice.request(EVENTS.AWARENESS, { doc: session.id, update: awarenessUpdate(alice.ydoc(session.id).clientID, 1, state) }), { ok: true })
    // Ten updates in flight, and kill -9 the moment the 60th ACK arrives.
    const { acked, exit } = await typeUntilKilled(alice, session.id, server, 60)
    assert.equal(exit.signal, 'SIGKILL')
    alice.close()

    server = await startChildServer(env)
    const now = new Date().toISOString()
    // Rebuilt from history alone, not from the document.
    const rebuilt = await api(server.url, `/api/sessions/${session.id}/content?at=${now}`)
    assert.equal(rebuilt.status, 200)
    const lost = acked.filter(token => !rebuilt.body.includes(token))
    assert.deepEqual(lost, [], `${lost.length} of ${acked.length} acknowledged updates missing from history`)
    const history = await api(server.url, `/api/sessions/${session.id}/history`)
    const updates = history.body.buckets.reduce((/** @type {number} */ sum, /** @type {any} */ bucket) => sum + bucket.updates, 0)
    assert.ok(updates >= acked.length)
    assert.deepEqual([...new Set(history.body.buckets.flatMap((/** @type {any} */ bucket) => bucket.editors))], ['Guest Ada'])
    assert.equal((await server.stop('SIGTERM')).code, 0)
  })
})

describe('history configuration', () => {
  it('refuses a keystroke window under a minute, so a minute still being written is never folded', () => {
    for (const raw of ['0', '30s']) {
      assert.throws(() => loadConfig({ HISTORY_KEYSTROKES: raw }), (/** @type {Error} */ err) => err instanceof ConfigError && /HISTORY_KEYSTROKES/.test(err.message), raw)
    }
    assert.equal(loadConfig({ HISTORY_KEYSTROKES: '1m' }).historyKeystrokesMs, 60000)
    assert.equal(loadConfig({ HISTORY_RETENTION: '0' }).historyRetentionMs, 0)
  })
})

/**
 * Runs `write` while storage refuses writes: Redis past maxmemory (its OOM refusal), or the update
 * log failing as a full disk does.
 * @template T @param {Awaited<ReturnType<typeof startServer>>} tandem
 * @param {Awaited<ReturnType<typeof startRedis>> | undefined} redisServer @param {() => Promise<T>} write
 */
async function refusedByStorage (tandem, redisServer, write) {
  if (redisServer) {
    const admin = redisServer.client()
    try {
      await admin.config('SET', 'maxmemory-policy', 'noeviction')
      await admin.config('SET', 'maxmemory', '1')
      return await write()
    } finally {
      await admin.config('SET', 'maxmemory', '0')
      admin.quit()
    }
  }
  const log = /** @type {any} */ (tandem.server.backend.docStore).log
  const logWrite = log.write
  log.write = () => Promise.reject(Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }))
  try {
    return await write()
  } finally {
    log.write = logWrite
  }
}

/** @param {(path: string) => Promise<any>} get @param {string} id @param {number} at */
const textAt = (get, id, at) => get(`/api/sessions/${id}/content?at=${new Date(at).toISOString()}`)

/**
 * Waits until LevelDB holds what the update log held and has written it to its tables, where its
 * size is counted; nothing to do with Redis.
 * @param {Awaited<ReturnType<typeof startServer>>} tandem
 */
async function flushed (tandem) {
  const store = /** @type {any} */ (tandem.server.backend.historyStore)
  if (!store.level) return
  await new Promise(resolve => setTimeout(resolve, 250))
  await store.guard.db.compactRange('!history!', '!history!~')
}

/** @param {TestEditor} editor @param {string} id @param {string} text */
async function waitForText (editor, id, text) {
  for (let i = 0; i < 200 && editor.text(id) !== text; i++) await new Promise(resolve => setTimeout(resolve, 10))
  assert.equal(editor.text(id), text)
}

/**
 * The keys the session's history holds in storage.
 * @param {Awaited<ReturnType<typeof startServer>>} tandem @param {string} id
 */
async function historyKeys (tandem, id) {
  const store = /** @type {any} */ (tandem.server.backend.historyStore)
  await tandem.server.registry.get(id)?.settled()
  if (store.level) {
    // Held updates reach LevelDB with the next move.
    await new Promise(resolve => setTimeout(resolve, 250))
    return store.level.keys({ gt: `${id}!`, lt: `${id}!~` }).all()
  }
  const keys = await store.client.keys(`tandem:{doc:${id}}:h*`)
  const hlast = await store.client.hget(`tandem:{doc:${id}}:snap`, 'hlast')
  return hlast === null ? keys : [...keys, 'snap.hlast']
}
