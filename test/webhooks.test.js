import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import pino from 'pino'
import { ConfigError, loadConfig } from '../server/config.js'
import { revisionOf } from '../server/documents/revision.js'
import { LevelGuard } from '../server/storage/level-guard.js'
import { LevelOutbox } from '../server/storage/level-outbox.js'
import { openLevel } from '../server/storage/level.js'
import { StorageHealth } from '../server/storage/storage-health.js'
import { signatureOf, verifySignature } from '../server/webhooks/signature.js'
import { backoffMs } from '../server/webhooks/webhook-sender.js'
import { startChildServer } from './helpers/child-server.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { deferrals, missing } from './helpers/processes.js'
import { startRedis } from './helpers/redis.js'
import { startRedisCluster } from './helpers/redis-cluster.js'
import { api, createSession, startServer, tempDataDir } from './helpers/server.js'
import { startReceiver } from './helpers/webhook-receiver.js'

const SECRET = 'whsec-test-0123456789abcdef'
const EVENT_TYPES = ['session.created', 'editor.joined', 'document.changed', 'editor.left', 'session.deleted']

/** Tiny timings: a retry waits milliseconds, a hung receiver costs a fraction of a second. */
const FAST = {
  webhookSecret: SECRET,
  webhookTimeoutMs: 300,
  webhookBackoffMs: 5,
  webhookMaxBackoffMs: 40,
  webhookMaxAttempts: 30,
  webhookDebounceMs: 50
}

/** The value of one series of /metrics. @param {string} url @param {string} series name and labels, as printed */
async function metric (url, series) {
  const text = /** @type {string} */ ((await api(url, '/metrics')).body)
  const line = text.split('\n').find(row => row.startsWith(`${series.replace(/}$/, '')}`) && !row.startsWith('#'))
  return line === undefined ? undefined : Number(line.split(' ').pop())
}

/** @typedef {Awaited<ReturnType<typeof startReceiver>>} Receiver */

/**
 * Every kind of event, in the order a session lives: created, an editor joins, edits, leaves, deleted.
 * Resolves with what the editor saw last. @param {string} url @param {Receiver} receiver
 */
async function liveOneSession (url, receiver) {
  const session = await createSession(url, { content: 'hello' })
  const editor = new TestEditor(url)
  await editor.join(session.id)
  assert.deepEqual(await editor.insert(session.id, 5, ', world'), { ok: true })
  await eventually(() => receiver.deliveredOfType('document.changed').some(event => event.data.length === 12), { what: 'document.changed' })
  const text = editor.text(session.id)
  const revision = revisionOf(editor.ydoc(session.id))
  editor.close()
  await eventually(() => receiver.deliveredOfType('editor.left').length === 1, { what: 'editor.left' })
  assert.equal((await api(url, `/api/sessions/${session.id}`, { method: 'DELETE' })).status, 204)
  return { session, text, revision }
}

/**
 * The assertions every mode shares: signed, one body per id, every kind delivered with its data.
 * @param {Receiver} receiver @param {Awaited<ReturnType<typeof liveOneSession>>} lived
 */
function checkDeliveries (receiver, { session, text, revision }) {
  assert.ok(receiver.requests.length > 0)
  assert.ok(receiver.requests.every(request => request.verified), 'every request passes the documented signature check')
  /** @type {Map<string, Set<string>>} */
  const bodies = new Map()
  for (const { body, raw, headers } of receiver.requests) {
    assert.equal(headers['tandem-event-id'], body.id)
    assert.equal(headers['tandem-event-type'], body.type)
    bodies.set(body.id, (bodies.get(body.id) ?? new Set()).add(raw))
  }
  assert.ok([...bodies.values()].every(sent => sent.size === 1), 'a retry sends the same body, id included')
  const delivered = [...receiver.delivered().values()]
  for (const type of EVENT_TYPES) assert.ok(delivered.some(event => event.type === type && event.session === session.id), `${type} delivered`)
  for (const event of delivered) {
    assert.deepEqual(Object.keys(event), ['id', 'type', 'createdAt', 'session', 'data'])
    assert.match(event.createdAt, /^\d{4}-\d\d-\d\dT/)
  }
  const changed = receiver.deliveredOfType('document.changed').at(-1)
  assert.deepEqual(changed.data, { revision, length: text.length })
  assert.deepEqual(receiver.deliveredOfType('editor.joined')[0].data, { user: null, role: 'editor' })
  assert.deepEqual(receiver.deliveredOfType('editor.left')[0].data, { user: null, role: 'editor' })
  assert.deepEqual(receiver.deliveredOfType('session.created')[0].data, { name: 'test', language: 'plaintext', maxEditors: 50 })
}

/** FAST as a child process's environment. @param {string} webhookUrl */
const fastEnvironment = webhookUrl => ({
  WEBHOOK_URL: webhookUrl,
  WEBHOOK_SECRET: SECRET,
  WEBHOOK_TIMEOUT_MS: '500',
  WEBHOOK_BACKOFF_MS: '5',
  WEBHOOK_MAX_BACKOFF_MS: '100',
  WEBHOOK_MAX_ATTEMPTS: '100'
})

/** Fails the first three requests with 500, leaves the fourth unanswered, answers the rest 200. @param {number} n */
const flaky = n => n <= 3 ? 500 : n === 4 ? 'hang' : 200

describe('webhooks', () => {
  it('signs as docs/API.md says a receiver checks, and refuses a forged or stale signature', () => {
    const body = '{"id":"evt_1"}'
    const now = Math.floor(Date.now() / 1000)
    assert.ok(verifySignature(SECRET, signatureOf(SECRET, body, now), body))
    assert.ok(!verifySignature(SECRET, signatureOf(SECRET, body, now), body + ' '))
    assert.ok(!verifySignature(SECRET, signatureOf('another-secret-0123456', body, now), body))
    assert.ok(!verifySignature(SECRET, signatureOf(SECRET, body, now - 3600), body))
    assert.ok(!verifySignature(SECRET, 'v1=00', body))
  })

  it('waits before a retry at most the backoff doubled per attempt, capped, drawn at random below it', () => {
    const options = { backoffMs: 100, maxBackoffMs: 1000 }
    assert.deepEqual([1, 2, 3, 4, 5, 40].map(attempts => backoffMs(attempts, options, () => 0.999)), [99, 199, 399, 799, 999, 999])
    assert.equal(backoffMs(3, options, () => 0), 0)
  })

  it('never hands out a delivery of the embedded outbox again while its retry is being written', async (t) => {
    const defer = deferrals(t)
    const data = await tempDataDir()
    defer(() => data.remove())
    const logger = pino({ level: 'silent' })
    const db = await openLevel(join(data.dir, 'db'), logger)
    defer(() => db.close())
    const outbox = new LevelOutbox(new LevelGuard(db, { health: new StorageHealth(logger, { inc () {} }), logger }), { syncWrites: false, max: 10_000 })
    const deliveries = Array.from({ length: 2000 }, (_, i) => ({ event: `evt_${i}`, type: 'session.created', url: 'http://127.0.0.1:9/', body: '{}', attempts: 0 }))
    assert.equal(await outbox.add(deliveries), true)
    const [first] = await outbox.take(1)
    // Retried for later while a long read of what is due is under way: that read must not hand it out.
    const [again] = await Promise.all([outbox.take(5000), outbox.retry(first, Date.now() + 60_000)])
    assert.equal(again.length, 1999)
    assert.ok(again.every(taken => taken.event !== first.event))
    assert.equal(await outbox.depth(), 2000)
  })

  it('delivers every event, signed, through failures and a timeout, with the same id on each retry', async (t) => {
    const defer = deferrals(t)
    const receiver = await startReceiver({ secret: SECRET, answer: flaky })
    defer(() => receiver.close())
    const tandem = await startServer({ ...FAST, webhookUrl: receiver.url })
    defer(() => tandem.close())
    const lived = await liveOneSession(tandem.url, receiver)
    await eventually(() => EVENT_TYPES.every(type => receiver.deliveredOfType(type).length > 0), { what: 'every kind of event' })
    checkDeliveries(receiver, lived)
    for (const [n, failed] of receiver.requests.slice(0, 4).entries()) {
      assert.ok(receiver.requests.slice(n + 1).some(later => later.body.id === failed.body.id && later.answer === 200),
        `the event answered ${failed.answer} is sent again, with its id, and delivered`)
    }
    await eventually(async () => await metric(tandem.url, 'tandem_webhook_outbox_depth') === 0, { what: 'an empty outbox' })
    assert.equal(await metric(tandem.url, 'tandem_webhook_failures_total{reason="status"'), 3)
    assert.equal(await metric(tandem.url, 'tandem_webhook_failures_total{reason="timeout"'), 1)
    assert.equal(await metric(tandem.url, 'tandem_webhook_deliveries_total{result="delivered"'), receiver.delivered().size)
  })

  it('creates sessions and acknowledges edits while every delivery hangs', async (t) => {
    const defer = deferrals(t)
    const receiver = await startReceiver({ secret: SECRET, answer: () => 'hang' })
    defer(() => receiver.close())
    const tandem = await startServer({ ...FAST, webhookTimeoutMs: 60_000, webhookConcurrency: 1, webhookUrl: receiver.url })
    defer(() => tandem.close())
    const session = await createSession(tandem.url)
    await eventually(() => receiver.requests.length === 1, { what: 'the one slot taken' })
    const editor = new TestEditor(tandem.url)
    defer(() => editor.close())
    await editor.join(session.id)
    for (let i = 0; i < 20; i++) assert.deepEqual(await editor.insert(session.id, 0, `${i};`), { ok: true })
    assert.equal((await createSession(tandem.url)).webhook, false)
    assert.equal(receiver.requests.length, 1, 'the rest wait in the outbox')
  })

  it('names the user and role of a token in editor.joined and editor.left, a viewer\'s too', async (t) => {
    const defer = deferrals(t)
    const receiver = await startReceiver({ secret: SECRET })
    defer(() => receiver.close())
    const apiKey = 'an-api-key-of-the-test'
    const tandem = await startServer({ ...FAST, authSecret: 'a-test-secret-that-is-at-least-32-characters', apiKey, webhookUrl: receiver.url })
    defer(() => tandem.close())
    const headers = { authorization: `Bearer ${apiKey}` }
    const session = (await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'watched' }, headers })).body
    const minted = await api(tandem.url, `/api/sessions/${session.id}/tokens`, { method: 'POST', body: { user: 'ada', role: 'viewer' }, headers })
    const viewer = new TestEditor(tandem.url, { auth: { token: minted.body.token } })
    defer(() => viewer.close())
    await viewer.join(session.id)
    await eventually(() => receiver.deliveredOfType('editor.joined').length === 1)
    viewer.close()
    await eventually(() => receiver.deliveredOfType('editor.left').length === 1)
    for (const type of ['editor.joined', 'editor.left']) {
      assert.deepEqual(receiver.deliveredOfType(type)[0].data, { user: 'ada', role: 'viewer' }, type)
    }
  })

  it('sends a session\'s events to its own webhookUrl as well, and stops once it is cleared', async (t) => {
    const defer = deferrals(t)
    const everything = await startReceiver({ secret: SECRET })
    defer(() => everything.close())
    const own = await startReceiver({ secret: SECRET })
    defer(() => own.close())
    const tandem = await startServer({ ...FAST, webhookUrl: everything.url })
    defer(() => tandem.close())
    const session = await createSession(tandem.url, { webhookUrl: own.url })
    assert.equal(session.webhook, true)
    assert.ok(!JSON.stringify(session).includes('receiver-token'), 'the URL is never shown')
    await eventually(() => own.deliveredOfType('session.created').length === 1)
    await eventually(() => everything.deliveredOfType('session.created').length === 1)
    assert.equal(own.deliveredOfType('session.created')[0].id, everything.deliveredOfType('session.created')[0].id)

    const cleared = await api(tandem.url, `/api/sessions/${session.id}`, { method: 'PATCH', body: { webhookUrl: null } })
    assert.equal(cleared.body.webhook, false)
    assert.equal((await api(tandem.url, `/api/sessions/${session.id}`, { method: 'DELETE' })).status, 204)
    const marker = await createSession(tandem.url, { webhookUrl: own.url })
    await eventually(() => own.deliveredOfType('session.created').some(event => event.session === marker.id), { what: 'the marker' })
    await eventually(() => everything.deliveredOfType('session.deleted').length === 1)
    assert.equal(own.deliveredOfType('session.deleted').length, 0)
  })

  it('refuses a bad webhookUrl with BAD_REQUEST naming the field, and creates or changes nothing', async (t) => {
    const defer = deferrals(t)
    const tandem = await startServer({ ...FAST })
    defer(() => tandem.close())
    const session = await createSession(tandem.url, { webhookUrl: 'https://hooks.example/tandem' })
    const before = (await api(tandem.url, '/api/sessions')).body
    for (const webhookUrl of ['ftp://hooks.example/x', 'javascript:alert(1)', 'not a url', '/relative', 42, `https://hooks.example/${'x'.repeat(2048)}`]) {
      const created = await api(tandem.url, '/api/sessions', { method: 'POST', body: { name: 'refused', webhookUrl } })
      assert.equal(created.status, 400, String(webhookUrl))
      assert.equal(created.body.error.code, 'BAD_REQUEST')
      assert.deepEqual(created.body.error.details.map((/** @type {{ field: string }} */ detail) => detail.field), ['webhookUrl'])
      const changed = await api(tandem.url, `/api/sessions/${session.id}`, { method: 'PATCH', body: { name: 'renamed', webhookUrl } })
      assert.equal(changed.status, 400)
    }
    assert.deepEqual((await api(tandem.url, '/api/sessions')).body, before)

    const unsigned = await startServer({})
    defer(() => unsigned.close())
    const refused = await api(unsigned.url, '/api/sessions', { method: 'POST', body: { name: 'x', webhookUrl: 'https://hooks.example/tandem' } })
    assert.equal(refused.status, 400)
    assert.deepEqual(refused.body.error.details, [{ field: 'webhookUrl', message: 'this server has no WEBHOOK_SECRET to sign webhooks with' }])
    assert.deepEqual((await api(unsigned.url, '/api/sessions')).body.sessions, [])
  })

  it('drops a delivery after its last attempt, and counts it', async (t) => {
    const defer = deferrals(t)
    const receiver = await startReceiver({ secret: SECRET, answer: () => 500 })
    defer(() => receiver.close())
    const tandem = await startServer({ ...FAST, webhookMaxAttempts: 3, webhookUrl: receiver.url })
    defer(() => tandem.close())
    await createSession(tandem.url)
    await eventually(async () => await metric(tandem.url, 'tandem_webhook_deliveries_total{result="gave_up"') === 1, { what: 'the delivery given up' })
    assert.equal(receiver.requests.length, 3)
    assert.equal(await metric(tandem.url, 'tandem_webhook_outbox_depth'), 0)
  })

  it('holds at most WEBHOOK_OUTBOX_MAX deliveries, dropping and counting events past it while sessions go on', async (t) => {
    const defer = deferrals(t)
    const receiver = await startReceiver({ secret: SECRET, answer: () => 503 })
    defer(() => receiver.close())
    const tandem = await startServer({ ...FAST, webhookBackoffMs: 600_000, webhookMaxBackoffMs: 600_000, webhookOutboxMax: 10, webhookUrl: receiver.url })
    defer(() => tandem.close())
    for (let i = 0; i < 12; i++) await createSession(tandem.url)
    assert.equal((await api(tandem.url, '/api/sessions?limit=100')).body.sessions.length, 12)
    assert.equal(await metric(tandem.url, 'tandem_webhook_outbox_depth'), 10)
    assert.equal(await metric(tandem.url, 'tandem_webhook_deliveries_total{result="outbox_full"'), 2)
  })

  it('delivers an event stored before a kill -9 once the server has started again', async (t) => {
    const defer = deferrals(t)
    const data = await tempDataDir()
    defer(() => data.remove())
    const receiver = await startReceiver({ secret: SECRET, answer: () => 503 })
    defer(() => receiver.close())
    const env = { DATA_DIR: data.dir, ...fastEnvironment(receiver.url) }
    const first = await startChildServer(env)
    defer(() => first.child.kill('SIGKILL'))
    const session = await createSession(first.url)
    await eventually(() => receiver.requests.some(request => request.body.session === session.id), { what: 'a first attempt' })
    const { id } = receiver.requests[0].body
    await first.stop('SIGKILL')

    receiver.answerWith(() => 200)
    const second = await startChildServer(env)
    defer(() => second.stop('SIGTERM'))
    await eventually(() => receiver.delivered().has(id), { what: 'the event delivered after the restart' })
    assert.equal(receiver.delivered().get(id).type, 'session.created')
  })

  it('leaves a delivery in flight in the outbox when the server closes, for the next start to send', async (t) => {
    const defer = deferrals(t)
    const data = await tempDataDir()
    defer(() => data.remove())
    const receiver = await startReceiver({ secret: SECRET, answer: () => 'hang' })
    defer(() => receiver.close())
    // A receiver that hangs for longer than the test: the close must not wait for it.
    const options = { ...FAST, webhookTimeoutMs: 60_000, dataDir: data.dir, webhookUrl: receiver.url }
    const first = await startServer(options)
    const session = await createSession(first.url)
    await eventually(() => receiver.requests.length === 1, { what: 'the delivery in flight' })
    await first.close()

    receiver.answerWith(() => 200)
    const second = await startServer(options)
    defer(() => second.close())
    await eventually(() => receiver.deliveredOfType('session.created').some(event => event.id === receiver.requests[0].body.id && event.session === session.id))
  })

  it('announces the edits of a document.changed window still open when the server closes', async (t) => {
    const defer = deferrals(t)
    const data = await tempDataDir()
    defer(() => data.remove())
    const receiver = await startReceiver({ secret: SECRET })
    defer(() => receiver.close())
    const options = { ...FAST, webhookDebounceMs: 3_600_000, dataDir: data.dir, webhookUrl: receiver.url }
    const first = await startServer(options)
    const session = await createSession(first.url)
    const editor = new TestEditor(first.url)
    defer(() => editor.close())
    await editor.join(session.id)
    assert.deepEqual(await editor.insert(session.id, 0, 'last words'), { ok: true })
    const revision = revisionOf(editor.ydoc(session.id))
    await first.close()

    const second = await startServer(options)
    defer(() => second.close())
    await eventually(() => receiver.deliveredOfType('document.changed').length === 1, { what: 'document.changed' })
    assert.deepEqual(receiver.deliveredOfType('document.changed')[0].data, { revision, length: 10 })
  })

  it('refuses to start with a WEBHOOK_URL that is not http(s), or one without a secret, naming the variable and hiding the secret', () => {
    assert.throws(() => loadConfig({ WEBHOOK_URL: 'ftp://hooks.example/x', WEBHOOK_SECRET: SECRET }), (err) => err instanceof ConfigError && /^WEBHOOK_URL=/.test(err.message))
    assert.throws(() => loadConfig({ WEBHOOK_URL: 'hooks.example/x', WEBHOOK_SECRET: SECRET }), /WEBHOOK_URL/)
    assert.throws(() => loadConfig({ WEBHOOK_URL: 'https://hooks.example/x' }), (err) => err instanceof ConfigError && /WEBHOOK_SECRET/.test(err.message))
    assert.throws(() => loadConfig({ WEBHOOK_SECRET: 'short-secret' }), (err) => err instanceof ConfigError &&
      err.message.startsWith('WEBHOOK_SECRET=(hidden)') && !err.message.includes('short-secret'))
    assert.equal(loadConfig({ WEBHOOK_URL: 'https://hooks.example/x', WEBHOOK_SECRET: SECRET }).webhookUrl, 'https://hooks.example/x')
  })
})

describe('webhooks on a real Redis', { skip: missing('redis-server') }, () => {
  it('delivers every event, signed, through failures and a timeout, with the same id on each retry', async (t) => {
    const defer = deferrals(t)
    const redis = await startRedis()
    defer(() => redis.remove())
    const receiver = await startReceiver({ secret: SECRET, answer: flaky })
    defer(() => receiver.close())
    // Entries this code did not write are dropped, not retried for ever.
    const client = redis.client()
    defer(() => client.quit())
    await client.xadd('tandem:{webhooks}:outbox', '*', 'd', 'not a delivery')
    const tandem = await startServer({ ...FAST, redisUrl: redis.url, webhookUrl: receiver.url })
    defer(() => tandem.close())
    const lived = await liveOneSession(tandem.url, receiver)
    await eventually(() => EVENT_TYPES.every(type => receiver.deliveredOfType(type).length > 0), { what: 'every kind of event' })
    checkDeliveries(receiver, lived)
    await eventually(async () => await metric(tandem.url, 'tandem_webhook_outbox_depth') === 0, { what: 'an empty outbox' })
  })

  it('has two servers editing one document at once send one document.changed between them, with the final revision', async (t) => {
    const defer = deferrals(t)
    const redis = await startRedis()
    defer(() => redis.remove())
    const receiver = await startReceiver({ secret: SECRET })
    defer(() => receiver.close())
    const options = { ...FAST, webhookDebounceMs: 300, redisUrl: redis.url, webhookUrl: receiver.url }
    const a = await startServer({ ...options, nodeName: 'host-a' })
    defer(() => a.close())
    const b = await startServer({ ...options, nodeName: 'host-b' })
    defer(() => b.close())

    assert.equal(await a.server.backend.outbox.claimWindow('test', 60_000), 0)
    assert.ok(await b.server.backend.outbox.claimWindow('test', 60_000) > 0, 'a window claimed by one server is refused to the other')

    const session = await createSession(a.url)
    const [alice, bob] = [new TestEditor(a.url), new TestEditor(b.url)]
    defer(() => { alice.close(); bob.close() })
    await alice.join(session.id)
    await bob.join(session.id)
    const acks = await Promise.all([alice.insert(session.id, 0, 'from a;'), bob.insert(session.id, 0, 'from b;')])
    assert.ok(acks.every(ack => ack.ok))
    await eventually(() => alice.text(session.id).length === 14 && bob.text(session.id) === alice.text(session.id))
    const revision = revisionOf(alice.ydoc(session.id))
    await eventually(() => receiver.deliveredOfType('document.changed').some(event => event.data.revision === revision), { what: 'the final revision' })
    // The second server's window, whether it ends now or as the server closes, finds that revision
    // announced already; whatever it stored, the first server delivers.
    await b.close()
    await eventually(async () => await metric(a.url, 'tandem_webhook_outbox_depth') === 0, { what: 'an empty outbox' })
    assert.deepEqual(receiver.deliveredOfType('document.changed').map(event => event.data), [{ revision, length: 14 }])
  })

  it('has another process take over a delivery held by one killed with -9', async (t) => {
    const defer = deferrals(t)
    const redis = await startRedis()
    defer(() => redis.remove())
    const receiver = await startReceiver({ secret: SECRET, answer: () => 'hang' })
    defer(() => receiver.close())
    const env = fastEnvironment(receiver.url)
    const dying = await startChildServer({ REDIS_URL: redis.url, ...env })
    defer(() => dying.child.kill('SIGKILL'))
    const session = await createSession(dying.url)
    await eventually(() => receiver.requests.some(request => request.body.session === session.id), { what: 'the delivery held' })
    const { id } = receiver.requests[0].body
    await dying.stop('SIGKILL')

    receiver.answerWith(() => 200)
    const survivor = await startServer({ ...FAST, webhookTimeoutMs: Number(env.WEBHOOK_TIMEOUT_MS), redisUrl: redis.url, webhookUrl: receiver.url })
    defer(() => survivor.close())
    await eventually(() => receiver.delivered().has(id), { what: 'the delivery taken over' })
  })

  it('delivers every event, signed, through failures and a timeout, on a 3-master Redis Cluster', async (t) => {
    const defer = deferrals(t)
    const cluster = await startRedisCluster()
    defer(() => cluster.remove())
    const receiver = await startReceiver({ secret: SECRET, answer: flaky })
    defer(() => receiver.close())
    const tandem = await startServer({ ...FAST, redisUrl: cluster.url, webhookUrl: receiver.url })
    defer(() => tandem.close())
    const lived = await liveOneSession(tandem.url, receiver)
    await eventually(() => EVENT_TYPES.every(type => receiver.deliveredOfType(type).length > 0), { what: 'every kind of event' })
    checkDeliveries(receiver, lived)
    await eventually(async () => await metric(tandem.url, 'tandem_webhook_outbox_depth') === 0, { what: 'an empty outbox' })
  })

  it('has two servers on one Redis deliver each event once', async (t) => {
    const defer = deferrals(t)
    const redis = await startRedis()
    defer(() => redis.remove())
    const receiver = await startReceiver({ secret: SECRET })
    defer(() => receiver.close())
    const a = await startServer({ ...FAST, redisUrl: redis.url, webhookUrl: receiver.url, nodeName: 'host-a' })
    defer(() => a.close())
    const b = await startServer({ ...FAST, redisUrl: redis.url, webhookUrl: receiver.url, nodeName: 'host-b' })
    defer(() => b.close())
    const created = []
    for (let i = 0; i < 10; i++) created.push(await createSession(i % 2 ? a.url : b.url))
    await eventually(() => receiver.deliveredOfType('session.created').length === 10, { what: 'ten session.created' })
    // One more event after them all: whatever was sent twice has arrived by then.
    const marker = await createSession(a.url)
    await eventually(() => receiver.deliveredOfType('session.created').some(event => event.session === marker.id))
    const ids = receiver.requests.map(request => request.body.id)
    assert.equal(new Set(ids).size, ids.length, 'no event was sent twice')
    assert.deepEqual(new Set(receiver.deliveredOfType('session.created').map(event => event.session)), new Set([...created, marker].map(session => session.id)))
  })
})
