import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { io } from 'socket.io-client'
import { NODE_OPTIONS } from '../server/node-options.js'
import { eventually } from './helpers/eventually.js'
import { missing } from './helpers/processes.js'
import { startCluster } from './helpers/pm2.js'
import { openDoc } from './helpers/provider.js'
import { startRedis } from './helpers/redis.js'
import { api, contentOf, createSession, tempDataDir } from './helpers/server.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const run = promisify(execFile)
const LOADTEST = fileURLToPath(new URL('../loadtest/cli.js', import.meta.url))

describe('npm run cluster with a configuration its workers refuse', () => {
  it('stops before PM2 starts, with the reason on the terminal and a non-zero exit code', async (t) => {
    const home = await tempDataDir()
    t.after(() => home.remove())
    const { REDIS_URL, REDIS_CLUSTER_NODES, ...inherited } = process.env
    const env = { ...inherited, PM2_HOME: home.dir, WORKERS: '2' }
    await assert.rejects(run('npm', ['run', 'cluster'], { cwd: ROOT, env, timeout: 60000 }), (/** @type {any} */ err) => {
      assert.equal(err.code, 2, `exit code: ${err.code}`)
      assert.match(err.stderr, /^tandem: a PM2 cluster needs REDIS_URL \(or REDIS_CLUSTER_NODES\)/m)
      assert.doesNotMatch(err.stderr, /^\s+at /m, 'no stack')
      return true
    })
    // PM2 keeps its daemon's pid file and sockets in PM2_HOME: nothing there, no daemon started.
    assert.deepEqual(await readdir(home.dir), [])
  })
})

// A real PM2 cluster of two workers from ecosystem.config.js, a real redis-server, and editors on the
// shipped provider (which reconnects, rejoins and resends what was not acknowledged).

describe('PM2 cluster of two workers', { skip: missing('redis-server') }, () => {
  /** @type {Awaited<ReturnType<typeof startRedis>>} */
  let redis
  /** @type {Awaited<ReturnType<typeof startCluster>>} */
  let cluster
  /** @type {ReturnType<typeof openDoc>[]} */
  const docs = []
  /** @param {string} id */
  const editor = (id) => {
    const doc = openDoc(cluster.url, id)
    docs.push(doc)
    return doc
  }

  before(async () => {
    redis = await startRedis()
    cluster = await startCluster({ redisUrl: redis.url, workers: 2, env: { LOG_LEVEL: 'info' } })
  })
  after(async () => {
    for (const doc of docs) doc.destroy()
    await cluster?.remove()
    await redis?.remove()
  })

  /** Editors that each append a numbered token every `everyMs`; returns a stop function. */
  function type (/** @type {ReturnType<typeof openDoc>[]} */ editors, everyMs = 20) {
    let n = 0
    const timer = setInterval(() => {
      editors.forEach((e, i) => e.append(`[${i}:${n}]`))
      n++
    }, everyMs)
    return {
      stop: () => clearInterval(timer),
      /** Tokens typed so far by each editor. */
      count: () => n,
      tokens: () => editors.flatMap((_, i) => Array.from({ length: n }, (_, k) => `[${i}:${k}]`))
    }
  }

  /** Editors per worker, from one /metrics scrape: `worker` label → count. */
  async function editorsPerWorker () {
    const metrics = (await api(cluster.url, '/metrics')).body
    return new Map([...metrics.matchAll(/^tandem_editors\{worker="([^"]+)"\} (\d+)/gm)].map(([, worker, count]) => [worker, Number(count)]))
  }

  /**
   * At least `count` synced editors of `id`, on both workers. PM2's balancer decides where each
   * connection lands, so editors are opened one at a time until both workers have some: which worker
   * took each shows as the one whose editor count went up. Bounded at 16 editors.
   * @param {string} id @param {number} count
   * @returns {Promise<{ editors: ReturnType<typeof openDoc>[], perWorker: Map<string, number> }>} this call's editors per worker
   */
  async function editorsOnBothWorkers (id, count) {
    const baseline = await editorsPerWorker()
    /** @type {Map<string, number>} */
    let added = new Map()
    const editors = []
    while (editors.length < count || added.size < 2) {
      assert.ok(editors.length < 16, `16 editors and still not on both workers: ${JSON.stringify([...added])}`)
      const doc = editor(id)
      editors.push(doc)
      await eventually(() => doc.provider.synced, { what: 'editor synced' })
      await eventually(async () => {
        const now = await editorsPerWorker()
        added = new Map([...now].map(([worker, n]) => /** @type {[string, number]} */ ([worker, n - (baseline.get(worker) ?? 0)])).filter(([, n]) => n > 0))
        return [...added.values()].reduce((sum, n) => sum + n, 0) === editors.length
      }, { intervalMs: 50, what: 'editor counted by its worker' })
    }
    return { editors, perWorker: added }
  }

  /**
   * Resolves once the server holds the `n`th token of every editor: typing has gone through.
   * @param {ReturnType<typeof openDoc>[]} editors @param {string} id @param {number} n
   */
  async function typedThrough (editors, id, n) {
    await eventually(async () => {
      const text = await contentOf(cluster.url, id)
      return editors.every((_, i) => text.includes(`[${i}:${n}]`))
    }, { intervalMs: 50, what: `token ${n} of every editor stored` })
  }

  /** @param {ReturnType<typeof openDoc>[]} editors @param {string} id */
  async function converged (editors, id) {
    try {
      await eventually(async () => editors.every(e => e.settled() && e.text() === editors[0].text()) &&
        await contentOf(cluster.url, id) === editors[0].text(), { timeoutMs: 30000, what: 'editors converged' })
    } catch (err) {
      const stored = await contentOf(cluster.url, id).catch(() => '(unreadable)')
      const states = editors.map(e => ({
        status: e.provider.status,
        unsynced: e.provider.unsyncedChanges,
        blockedBy: e.provider.blockedBy?.code ?? null,
        length: e.text().length,
        refused: e.events.refused.map(r => r.code),
        statuses: e.events.status.join(',')
      }))
      throw new Error(`${/** @type {Error} */ (err).message}: stored ${stored.length} characters; editors ${JSON.stringify(states)}`)
    }
  }

  it('runs every worker with the server\'s Node.js options, and names no DATA_DIR, which Redis workers do not use', async () => {
    const started = (await cluster.output()).split('\n').filter(line => line.includes('"msg":"listening"')).map(line => JSON.parse(line))
    assert.equal(started.length, 2, 'one `listening` line per worker')
    for (const { nodeOptions } of started) assert.deepEqual(nodeOptions, NODE_OPTIONS)
    for (const line of started) assert.ok(!('dataDir' in line), `a Redis worker logs dataDir: ${JSON.stringify(line)}`)
  })

  it('gives the load test its worker count through /metrics, which one port serves for both', async () => {
    const out = await tempDataDir()
    try {
      const { stdout } = await run(process.execPath, [LOADTEST, '--url', cluster.url, '--editors', '2', '--per-room', '2', '--warmup', '0', '--duration', '1',
        '--rest-duration', '0', '--json', '--out', out.dir], { timeout: 60000 })
      assert.equal(JSON.parse(stdout).server.workers, 2)
      const [dir] = await readdir(out.dir)
      assert.match(await readFile(join(out.dir, dir, 'report.md'), 'utf8'), /^Target: server at --url at .*, 2 workers\./m)
    } finally {
      await out.remove()
    }
  })

  it('spreads editors over both workers, which see each other\'s edits', async () => {
    const session = await createSession(cluster.url)
    const { editors } = await editorsOnBothWorkers(session.id, 4)
    const typing = type(editors)
    await typedThrough(editors, session.id, 5)
    typing.stop()
    await converged(editors, session.id)
    const text = editors[0].text()
    assert.deepEqual(typing.tokens().filter(token => !text.includes(token)), [])

    const metrics = (await api(cluster.url, '/metrics')).body
    const perWorker = [...metrics.matchAll(/^tandem_editors\{worker="([^"]+)"\} (\d+)/gm)]
    assert.equal(perWorker.length, 2, 'one scrape returns both workers\' series')
    assert.ok(perWorker.every(([, , count]) => Number(count) > 0), `editors on both workers: ${perWorker.map(m => m[0]).join(', ')}`)
  })

  it('loses no acknowledged edit when a worker is killed with SIGKILL while editors type', async (t) => {
    const session = await createSession(cluster.url)
    const { editors, perWorker } = await editorsOnBothWorkers(session.id, 4)
    /** @type {number[]} how long each editor of the killed worker took to be back, joined and synced */
    const outages = []
    for (const e of editors) {
      let lostAt = 0
      e.provider.on('status', ({ status }) => {
        if (status === 'connecting' && !lostAt) lostAt = performance.now()
        if (status === 'connected' && lostAt) outages.push(performance.now() - lostAt)
      })
    }
    const typing = type(editors)
    await typedThrough(editors, session.id, 3)
    const [victim] = await cluster.list()
    const victimEditors = [...perWorker].find(([worker]) => worker.endsWith(`/${victim.instance}`))?.[1] ?? 0
    assert.ok(victimEditors > 0, `editors on the worker to kill: ${JSON.stringify([...perWorker])}`)
    process.kill(victim.pid, 'SIGKILL')
    // Typing goes on until every editor of the killed worker is back, and a little past it.
    await eventually(() => outages.length >= victimEditors, { timeoutMs: 30000, what: 'editors of the killed worker back' })
    await typedThrough(editors, session.id, typing.count() + 3)
    typing.stop()
    await converged(editors, session.id)
    assert.ok(outages.length > 0, 'some editors were on the killed worker')
    t.diagnostic(`editors of the killed worker back and synced after ${outages.map(ms => Math.round(ms)).join(', ')} ms`)
    const text = await contentOf(cluster.url, session.id)
    assert.deepEqual(typing.tokens().filter(token => !text.includes(token)), [])
    await eventually(async () => (await cluster.list()).some(p => p.instance === victim.instance && p.pid !== victim.pid && p.status === 'online'),
      { timeoutMs: 20000, what: 'PM2 restarted the worker' })
  })

  it('rolls workers one by one on `pm2 reload`, and editors resync on their own', async () => {
    const session = await createSession(cluster.url)
    const editors = [editor(session.id), editor(session.id), editor(session.id)]
    await eventually(async () => editors.every(e => e.provider.status === 'connected'), { what: 'connected' })
    const before = await cluster.list()
    const typing = type(editors, 30)
    await cluster.reload()
    typing.stop()
    const afterReload = await cluster.list()
    assert.ok(afterReload.every(p => !before.some(b => b.pid === p.pid)), 'every worker was replaced')
    await converged(editors, session.id)
    const text = await contentOf(cluster.url, session.id)
    assert.deepEqual(typing.tokens().filter(token => !text.includes(token)), [])
  })

  it('refuses updates while Redis is down without any worker crashing, then lands them', async () => {
    const session = await createSession(cluster.url)
    const [alice, bob] = [editor(session.id), editor(session.id)]
    await eventually(async () => alice.provider.status === 'connected' && bob.provider.status === 'connected', { what: 'connected' })
    const restartsBefore = (await cluster.list()).map(p => p.restarts)
    await redis.stop()
    alice.append('written while Redis was down')
    await eventually(async () => alice.events.refused.some(r => r.code === 'UNAVAILABLE'), { what: 'UNAVAILABLE refusal' })
    const health = await api(cluster.url, '/api/health')
    assert.equal(health.status, 503)
    assert.equal(alice.provider.unsyncedChanges > 0, true, 'the client keeps the refused update')
    // Down long enough for the client to have tried again and been refused again.
    await eventually(async () => alice.events.refused.filter(r => r.code === 'UNAVAILABLE').length >= 2, { what: 'a retry refused as UNAVAILABLE' })
    await redis.start()
    await converged([alice, bob], session.id)
    assert.equal(await contentOf(cluster.url, session.id), 'written while Redis was down')
    assert.deepEqual((await cluster.list()).map(p => p.restarts), restartsBefore, 'no worker restarted')
  })

  it('refuses a long-polling client at once instead of leaving it hanging', async () => {
    const socket = io(cluster.url, { transports: ['polling'], reconnection: false })
    const started = performance.now()
    const error = await new Promise(resolve => socket.once('connect_error', resolve))
    socket.close()
    assert.ok(error instanceof Error)
    assert.ok(performance.now() - started < 2000)
  })

  it('brings sessions and documents back after the whole cluster restarts', async () => {
    const session = await createSession(cluster.url, { name: 'kept', content: 'before restart\n' })
    const [alice] = [editor(session.id)]
    await eventually(async () => alice.provider.status === 'connected', { what: 'connected' })
    alice.append('typed\n')
    await eventually(async () => alice.settled(), { what: 'acknowledged' })
    alice.destroy()
    await cluster.stop()
    await cluster.start()
    assert.equal((await api(cluster.url, `/api/sessions/${session.id}`)).body.name, 'kept')
    assert.equal(await contentOf(cluster.url, session.id), 'before restart\ntyped\n')
  })
})

describe('npm run cluster:ports: workers in fork mode, each on a port of its own', { skip: missing('redis-server') }, () => {
  /** @type {Awaited<ReturnType<typeof startRedis>>} */
  let redis
  /** @type {Awaited<ReturnType<typeof startCluster>>} */
  let cluster
  before(async () => {
    redis = await startRedis()
    cluster = await startCluster({ redisUrl: redis.url, workers: 2, ports: true })
  })
  after(async () => {
    await cluster?.remove()
    await redis?.remove()
  })

  it('runs one forked worker per consecutive port, which serve one session together', async () => {
    const workers = await cluster.list()
    assert.deepEqual(workers.map(w => [w.mode, w.status]), [['fork_mode', 'online'], ['fork_mode', 'online']])
    assert.equal(new URL(cluster.urls[1]).port, String(Number(new URL(cluster.urls[0]).port) + 1))
    const session = await createSession(cluster.urls[1])
    const editors = cluster.urls.map(url => openDoc(url, session.id))
    try {
      await eventually(() => editors.every(e => e.provider.synced), { what: 'an editor synced on each worker' })
      editors.forEach((e, i) => e.append(`[worker ${i}]`))
      await eventually(() => editors.every(e => e.settled() && e.text().includes('[worker 0]') && e.text().includes('[worker 1]')),
        { timeoutMs: 15000, what: 'each worker\'s edit reached the other\'s editor' })
      for (const url of cluster.urls) assert.equal(await contentOf(url, session.id), editors[0].text())
    } finally {
      for (const e of editors) e.destroy()
    }
  })
})
