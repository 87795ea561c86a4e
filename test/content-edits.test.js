import assert from 'node:assert/strict'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import pino from 'pino'
import * as Y from 'yjs'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { startChildServer } from './helpers/child-server.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { deferrals, missing } from './helpers/processes.js'
import { openDoc } from './helpers/provider.js'
import { startRedis } from './helpers/redis.js'
import { api, contentOf, startServer, tempDataDir } from './helpers/server.js'

// Server edits over REST (PUT /content, POST /edits) in each storage mode: they reach live editors
// as ordinary updates, merge with what editors type meanwhile, and are answered once stored.

const API_KEY = 'content-edits-api-key-0123'
const AUTH_SECRET = 'content-edits-secret-of-32-characters!!'
const KEY = { authorization: `Bearer ${API_KEY}` }

/**
 * Where servers keep documents: each server named by `name` (two of one name share storage, a
 * server and its successor).
 * @typedef {{ options: (name: string) => { dataDir?: string, redisUrl?: string }, env: (name: string) => Record<string, string>, remove: () => Promise<void>, redis?: Awaited<ReturnType<typeof startRedis>> }} Storage
 */

/** @type {{ name: string, skip: string | false, open: () => Promise<Storage> }[]} */
const STORAGES = [
  {
    name: 'embedded LevelDB',
    skip: false,
    async open () {
      const data = await tempDataDir()
      return { options: name => ({ dataDir: join(data.dir, name) }), env: name => ({ DATA_DIR: join(data.dir, name) }), remove: data.remove }
    }
  },
  {
    name: 'Redis',
    skip: missing('redis-server'),
    async open () {
      const redis = await startRedis()
      return { options: () => ({ redisUrl: redis.url }), env: () => ({ REDIS_URL: redis.url }), remove: redis.remove, redis }
    }
  }
]

/** Every line indented twice as deep and by two more: a formatter's change to each line. @param {string} text */
const reindent = text => text.replace(/^( *)(?=\S)/gm, (indent) => '  ' + indent + indent)

/** Forty lines of code, indented. */
const SOURCE = Array.from({ length: 40 }, (_, i) => `${' '.repeat(2 * (i % 3))}let v${i} = f(${i})\n`).join('')

for (const storage of STORAGES) {
  describe(`server edits over REST (${storage.name})`, { skip: storage.skip }, () => {
    /** @type {Storage} */
    let store
    /** @type {Awaited<ReturnType<typeof startServer>>} */
    let tandem

    before(async () => {
      store = await storage.open()
      tandem = await startServer({ ...store.options('main'), apiKey: API_KEY, authSecret: AUTH_SECRET })
    })
    after(async () => {
      await tandem?.close()
      await store?.remove()
    })

    /** @param {string} path @param {Parameters<typeof api>[2]} [options] */
    const call = (path, options = {}) => api(tandem.url, path, { ...options, headers: { ...KEY, ...options.headers } })

    /** @param {string} [content] */
    const newSession = async (content) => {
      const res = await call('/api/sessions', { method: 'POST', body: { name: 'main.js', ...(content === undefined ? {} : { content }) } })
      assert.equal(res.status, 201)
      return /** @type {string} */ (res.body.id)
    }

    /** @param {string} id @param {'editor' | 'viewer'} role */
    const tokenFor = async (id, role) => (await call(`/api/sessions/${id}/tokens`, { method: 'POST', body: { user: role, role } })).body.token

    /** @param {string} id */
    const read = async (id) => {
      const res = await call(`/api/sessions/${id}/content`)
      assert.equal(res.status, 200)
      return { text: /** @type {string} */ (res.body), revision: /** @type {string} */ (res.headers.get('etag')).slice(1, -1) }
    }

    /** @param {string} id @param {string} text */
    const put = (id, text) => call(`/api/sessions/${id}/content`, { method: 'PUT', body: { text } })

    /** @param {string} id @param {unknown} body */
    const postEdits = (id, body) => call(`/api/sessions/${id}/edits`, { method: 'POST', body })

    /** An editor joined to `id` with an editor's token. @param {string} id @param {ReturnType<typeof deferrals>} defer */
    const editorOf = async (id, defer) => {
      const editor = new TestEditor(tandem.url, { auth: { token: await tokenFor(id, 'editor') } })
      defer(() => editor.close())
      assert.equal((await editor.join(id)).ok, true)
      return editor
    }

    it('replaces the text with PUT content and answers its revision, which editors joined receive as an update', async (t) => {
      const defer = deferrals(t)
      const id = await newSession('fn main() {\n}\n')
      const alice = openDoc(tandem.url, id, { token: await tokenFor(id, 'editor') })
      defer(() => alice.destroy())
      await eventually(() => alice.settled() && alice.text() === 'fn main() {\n}\n')

      const res = await put(id, 'fn main() {\n    println!("hi");\n}\n')
      assert.equal(res.status, 200)
      assert.deepEqual(Object.keys(res.body), ['revision', 'length'])
      assert.equal(res.body.length, 'fn main() {\n    println!("hi");\n}\n'.length)
      await eventually(() => alice.text() === 'fn main() {\n    println!("hi");\n}\n', { what: 'the editor receives the edit' })
      assert.deepEqual(await read(id), { text: alice.text(), revision: res.body.revision })

      const plain = await call(`/api/sessions/${id}/content`, { method: 'PUT', raw: 'fn main() {}\n', headers: { 'content-type': 'text/plain' } })
      assert.equal(plain.status, 200)
      await eventually(() => alice.text() === 'fn main() {}\n')
      assert.notEqual(plain.body.revision, res.body.revision)
    })

    it('applies a formatter\'s rewrite of every line while two editors type, losing none of their keystrokes', async (t) => {
      const defer = deferrals(t)
      const id = await newSession(SOURCE)
      const [alice, bob] = [await editorOf(id, defer), await editorOf(id, defer)]
      const formatted = reindent((await read(id)).text)

      // Alice types at the end of even lines, Bob of odd ones, a keystroke per update. The first
      // keystrokes are made before the formatter's edit reaches them and sent only after the server
      // has taken it: neither side has seen the other's (they are concurrent).
      /** @type {Map<number, string>} what each line has had typed at its end */
      const typed = new Map()
      /** @param {TestEditor} editor @param {number} line @param {string} key */
      const keystroke = (editor, line, key) => {
        const text = editor.ydoc(id).getText(TEXT_NAME)
        const end = text.toString().split('\n').slice(0, line + 1).join('\n').length
        typed.set(line, (typed.get(line) ?? '') + key)
        /** @type {Uint8Array[]} */
        const made = []
        const collect = (/** @type {Uint8Array} */ update) => { made.push(update) }
        editor.ydoc(id).on('update', collect)
        text.insert(end, key)
        editor.ydoc(id).off('update', collect)
        return made[0]
      }
      /** @type {{ editor: TestEditor, update: Uint8Array }[]} */
      const held = []
      for (let round = 0; round < 10; round++) {
        held.push({ editor: alice, update: keystroke(alice, (2 * round) % 40, `a${round}`) })
        held.push({ editor: bob, update: keystroke(bob, (2 * round + 1) % 40, `b${round}`) })
      }
      const answer = await put(id, formatted)
      assert.equal(answer.status, 200)
      const replies = held.map(({ editor, update }) => editor.request(EVENTS.UPDATE, { doc: id, update }))
      for (let round = 10; round < 20; round++) {
        const [aliceLine, bobLine] = [(2 * round) % 40, (2 * round + 1) % 40]
        replies.push(alice.request(EVENTS.UPDATE, { doc: id, update: keystroke(alice, aliceLine, `a${round}`) }))
        replies.push(bob.request(EVENTS.UPDATE, { doc: id, update: keystroke(bob, bobLine, `b${round}`) }))
      }
      assert.ok((await Promise.all(replies)).every(reply => reply.ok))

      // Each line is the formatter's, with what was typed on it still at its end.
      const expected = formatted.split('\n').map((line, i) => line + (typed.get(i) ?? '')).join('\n')
      await eventually(() => alice.text(id) === expected && bob.text(id) === expected, { what: 'both editors hold the formatted text and every keystroke' })
      assert.equal((await read(id)).text, expected)
    })

    it('answers a PUT only once the text is stored: a server started afresh on the same storage after a kill -9 serves it', async (t) => {
      const defer = deferrals(t)
      const child = await startChildServer({ ...store.env('durable') })
      defer(() => child.stop('SIGKILL'))
      const created = await api(child.url, '/api/sessions', { method: 'POST', body: { name: 'kept.rs', content: 'fn main() {}\n' } })
      const text = 'fn main() {\n    kept();\n}\n'
      assert.equal((await api(child.url, `/api/sessions/${created.body.id}/content`, { method: 'PUT', body: { text } })).status, 200)
      await child.stop('SIGKILL')
      const fresh = await startServer(store.options('durable'))
      defer(() => fresh.close())
      assert.equal(await contentOf(fresh.url, created.body.id), text)
    })

    it('refuses a viewer\'s token (403) and a wrong or missing key (401), changing nothing', async () => {
      const id = await newSession('kept\n')
      const viewer = await tokenFor(id, 'viewer')
      const editor = await tokenFor(id, 'editor')
      /** @type {{ headers: Record<string, string>, status: number, code: string }[]} */
      const attempts = [
        { headers: { authorization: `Bearer ${viewer}` }, status: 403, code: 'FORBIDDEN' },
        { headers: { authorization: 'Bearer not-the-key-and-not-a-token' }, status: 401, code: 'UNAUTHORIZED' },
        { headers: {}, status: 401, code: 'UNAUTHORIZED' }
      ]
      const before = await read(id)
      for (const { headers, status, code } of attempts) {
        for (const [path, method, body] of /** @type {const} */ ([['content', 'PUT', { text: 'changed\n' }], ['edits', 'POST', { revision: before.revision, edits: [{ at: 0, insert: '!' }] }]])) {
          const res = await api(tandem.url, `/api/sessions/${id}/${path}`, { method, body, headers })
          assert.equal(res.status, status, `${method} ${path} with ${JSON.stringify(headers)}`)
          assert.equal(res.body.error.code, code)
        }
      }
      assert.deepEqual(await read(id), before)
      const allowed = await api(tandem.url, `/api/sessions/${id}/content`, { method: 'PUT', body: { text: 'changed\n' }, headers: { authorization: `Bearer ${editor}` } })
      assert.equal(allowed.status, 200)
      assert.equal((await read(id)).text, 'changed\n')
    })

    it('writes an audit line for each change, naming the token\'s user and never the token', async (t) => {
      const defer = deferrals(t)
      /** @type {any[]} */
      const lines = []
      const logger = pino({ level: 'info' }, new Writable({ write (chunk, encoding, done) { lines.push(JSON.parse(String(chunk))); done() } }))
      const audited = await startServer({ ...store.options('audited'), apiKey: API_KEY, authSecret: AUTH_SECRET }, { logger })
      defer(() => audited.close())
      const created = await api(audited.url, '/api/sessions', { method: 'POST', body: { name: 'a.js' }, headers: KEY })
      const id = created.body.id
      const minted = await api(audited.url, `/api/sessions/${id}/tokens`, { method: 'POST', body: { user: 'ada', role: 'editor' }, headers: KEY })
      const asAda = { authorization: `Bearer ${minted.body.token}` }
      const replaced = await api(audited.url, `/api/sessions/${id}/content`, { method: 'PUT', body: { text: 'a\n' }, headers: asAda })
      const edited = await api(audited.url, `/api/sessions/${id}/edits`, { method: 'POST', body: { revision: replaced.body.revision, edits: [{ at: 0, insert: 'b' }] }, headers: KEY })
      assert.equal(edited.status, 200)
      const audit = lines.filter(line => line.audit && line.action.startsWith('content.'))
      assert.deepEqual(audit.map(({ action, session, user, revision }) => ({ action, session, user, revision })), [
        { action: 'content.replace', session: id, user: 'ada', revision: replaced.body.revision },
        { action: 'content.edit', session: id, user: undefined, revision: edited.body.revision }
      ])
      assert.ok(!JSON.stringify(audit).includes(minted.body.token) && !JSON.stringify(audit).includes(API_KEY))
    })

    it('refuses a text that would take the document past MAX_DOC_BYTES with 413 TOO_LARGE, changing nothing', async (t) => {
      const defer = deferrals(t)
      const small = await startServer({ ...store.options('small'), maxDocBytes: 2048 })
      defer(() => small.close())
      const created = await api(small.url, '/api/sessions', { method: 'POST', body: { name: 'small', content: 'short\n' } })
      const path = `/api/sessions/${created.body.id}/content`
      const res = await api(small.url, path, { method: 'PUT', body: { text: 'x'.repeat(4096) } })
      assert.equal(res.status, 413)
      assert.equal(res.body.error.code, 'TOO_LARGE')
      assert.equal(await contentOf(small.url, created.body.id), 'short\n')
      assert.equal((await api(small.url, path, { method: 'PUT', body: { text: 'short, and longer\n' } })).status, 200)
    })

    it('applies edits made against the current revision, and refuses a stale one with 409 CONFLICT naming the current', async (t) => {
      const defer = deferrals(t)
      const id = await newSession('let a = 1\nlet b = 2\n')
      const alice = await editorOf(id, defer)
      const start = await read(id)
      const res = await postEdits(id, { revision: start.revision, edits: [{ at: 4, delete: 1, insert: 'x' }, { at: 14, delete: 1, insert: 'y' }, { at: 20, insert: '// 😀\n' }] })
      assert.equal(res.status, 200)
      assert.equal(res.body.length, 'let x = 1\nlet y = 2\n// 😀\n'.length)
      await eventually(() => alice.text(id) === 'let x = 1\nlet y = 2\n// 😀\n')
      const now = await read(id)
      assert.equal(now.revision, res.body.revision)

      const stale = await postEdits(id, { revision: start.revision, edits: [{ at: 0, insert: '!' }] })
      assert.equal(stale.status, 409)
      assert.equal(stale.body.error.code, 'CONFLICT')
      assert.deepEqual(stale.body.error.details, { revision: now.revision })
      assert.deepEqual(await read(id), now)
    })

    it('replaces the text only while the document is still at the revision If-Match names', async () => {
      const id = await newSession('v0\n')
      const start = await read(id)
      const ifMatch = (/** @type {string} */ revision) => ({ 'if-match': `"${revision}"` })
      const first = await call(`/api/sessions/${id}/content`, { method: 'PUT', body: { text: 'v1\n' }, headers: ifMatch(start.revision) })
      assert.equal(first.status, 200)
      const stale = await call(`/api/sessions/${id}/content`, { method: 'PUT', body: { text: 'v2\n' }, headers: ifMatch(start.revision) })
      assert.equal(stale.status, 409)
      assert.equal(stale.body.error.code, 'CONFLICT')
      assert.deepEqual(stale.body.error.details, { revision: first.body.revision })
      assert.deepEqual(await read(id), { text: 'v1\n', revision: first.body.revision })
      assert.equal((await call(`/api/sessions/${id}/content`, { method: 'PUT', body: { text: 'v2\n' }, headers: { 'if-match': '*' } })).status, 200)
    })

    it('refuses edits out of order, overlapping, past the text or inside a character with 400 naming each, changing nothing', async () => {
      const id = await newSession('abc😀def\n')
      const start = await read(id)
      const refusals = [
        { edits: [{ at: 4, insert: 'x' }, { at: 1, insert: 'y' }], field: 'edits.1' },
        { edits: [{ at: 0, delete: 3 }, { at: 2, insert: 'y' }], field: 'edits.1' },
        { edits: [{ at: 5, delete: 10 }], field: 'edits.0' },
        { edits: [{ at: 4, insert: 'x' }], field: 'edits.0' },
        { edits: [{ at: -1, insert: 'x' }], field: 'edits.0.at' },
        { edits: [{ at: 0, insert: 'x', replace: true }], field: 'edits.0.replace' },
        { edits: [], field: 'edits' }
      ]
      for (const { edits, field } of refusals) {
        const res = await postEdits(id, { revision: start.revision, edits })
        assert.equal(res.status, 400, JSON.stringify(edits))
        assert.equal(res.body.error.code, 'BAD_REQUEST')
        assert.deepEqual(res.body.error.details.map((/** @type {{ field: string }} */ detail) => detail.field), [field], JSON.stringify(edits))
      }
      assert.equal((await put(id, /** @type {any} */ (undefined))).status, 400)
      assert.deepEqual(await read(id), start)
    })

    it('refuses to change a text that holds an embedded object, whose positions no string can name', async (t) => {
      const defer = deferrals(t)
      const id = await newSession('ab\n')
      const alice = await editorOf(id, defer)
      assert.equal((await alice.edit(id, text => text.insertEmbed(1, { image: 'x.png' }))).ok, true)
      const before = await read(id)
      const res = await put(id, 'abc\n')
      assert.equal(res.status, 400)
      assert.equal(res.body.error.code, 'BAD_REQUEST')
      const edits = await postEdits(id, { revision: before.revision, edits: [{ at: 2, insert: 'c' }] })
      assert.equal(edits.status, 400)
      assert.deepEqual(await read(id), before)
    })

    it('stores and sends nothing for an unchanged text', async (t) => {
      const defer = deferrals(t)
      const id = await newSession('same\n')
      const alice = await editorOf(id, defer)
      const doc = /** @type {import('../server/documents/live-doc.js').LiveDoc} */ (tandem.server.registry.get(id))
      const [bytes, start] = [doc.bytes, await read(id)]
      const unchanged = await put(id, 'same\n')
      assert.deepEqual(unchanged.body, { revision: start.revision, length: 5 })
      assert.equal(doc.bytes, bytes)
      // The next change is the first update the editor receives.
      assert.equal((await put(id, 'changed\n')).status, 200)
      await eventually(() => alice.text(id) === 'changed\n')
      assert.equal(alice.received.filter(({ event }) => event === EVENTS.UPDATE).length, 1)
    })

    it('makes every edit of one loaded copy under one Yjs client id of its own', async (t) => {
      const defer = deferrals(t)
      const id = await newSession('v0\n')
      const alice = await editorOf(id, defer)
      const clients = () => alice.ydoc(id).store.clients.size
      const seeded = clients()
      for (let version = 1; version <= 4; version++) {
        assert.equal((await put(id, `v${version}\n`)).status, 200)
        await eventually(() => alice.text(id) === `v${version}\n`)
      }
      assert.equal(clients(), seeded + 1)
    })

    it('takes up its client id again in a later copy of the document that holds everything made under it', async () => {
      const id = await newSession('v0\n')
      const clientsStored = async () => {
        const res = await call(`/api/sessions/${id}/content?format=yjs`)
        return Y.decodeStateVector(Y.encodeStateVectorFromUpdate(res.body)).size
      }
      for (let version = 1; version <= 3; version++) {
        assert.equal((await put(id, `v${version}\n`)).status, 200)
        await tandem.server.registry.unload(id)
      }
      assert.equal((await read(id)).text, 'v3\n')
      assert.equal(await clientsStored(), 2, 'the seed\'s and the server edits\'')
    })

    if (storage.name === 'Redis') {
      it('delivers a PUT on one process to an editor on another', async (t) => {
        const defer = deferrals(t)
        const other = await startChildServer({ ...store.env('other') })
        defer(() => other.stop('SIGKILL'))
        const id = await newSession('fn a() {}\n')
        const alice = await editorOf(id, defer)
        const res = await api(other.url, `/api/sessions/${id}/content`, { method: 'PUT', body: { text: 'fn a() {}\nfn b() {}\n' } })
        assert.equal(res.status, 200)
        await eventually(() => alice.text(id) === 'fn a() {}\nfn b() {}\n', { what: 'the edit reaches the editor on the other process' })
        assert.equal((await read(id)).revision, res.body.revision)
        // Its copy caught up with this one's text first: the diff keeps the editor's line.
        assert.deepEqual(await alice.insert(id, 0, '// top\n'), { ok: true })
        const next = await api(other.url, `/api/sessions/${id}/content`, { method: 'PUT', body: { text: '// top\nfn a() {}\nfn b() {}\nfn c() {}\n' } })
        assert.equal(next.status, 200)
        await eventually(() => alice.text(id) === '// top\nfn a() {}\nfn b() {}\nfn c() {}\n')
      })

      it('takes a new client id after an edit under the last one was applied but never stored', async (t) => {
        const defer = deferrals(t)
        const id = await newSession('v0\n')
        const alice = await editorOf(id, defer)
        const admin = /** @type {NonNullable<Storage['redis']>} */ (store.redis).client()
        defer(() => admin.quit())
        // Redis refuses XADD alone, so the document's log takes no write while everything else
        // works: the edit is applied and sent to Alice, then its write is refused.
        await admin.call('ACL', 'SETUSER', 'default', '-xadd')
        defer(() => admin.call('ACL', 'SETUSER', 'default', '+xadd'))
        const refused = await put(id, 'v1\n')
        assert.equal(refused.status, 503)
        await eventually(() => alice.text(id) === 'v1\n', { what: 'the editor holds the unstored edit' })
        const [unstored] = alice.received.filter(({ event }) => event === EVENTS.UPDATE).map(({ payload }) => [...Y.parseUpdateMeta(payload.update).to.keys()][0])
        await admin.call('ACL', 'SETUSER', 'default', '+xadd')

        assert.equal((await put(id, 'v2\n')).status, 200)
        const stored = await call(`/api/sessions/${id}/content?format=yjs`)
        const clients = [...Y.decodeStateVector(Y.encodeStateVectorFromUpdate(stored.body)).keys()]
        assert.equal(clients.length, 2, 'the seed\'s and the new edit\'s')
        assert.ok(!clients.includes(unstored), 'the id of the unstored edit is not taken up again')
      })
    }
  })
}
