import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { startChildServer } from './helpers/child-server.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { deferrals, missing } from './helpers/processes.js'
import { startRedis } from './helpers/redis.js'
import { api, contentOf, createSession } from './helpers/server.js'
import { SWEEP_INTERVAL_MS } from '../server/realtime/cluster.js'

// Real `node server/index.js` processes on one real Redis, as a cluster runs them, seen only from
// outside: editors, REST, /metrics and Redis's own PUBSUB counts. Whatever a process publishes on a
// document's feed, and whenever it skips publishing (no other process holds the document), every
// editor must end up with every acknowledged edit, and an editor on another process must get each
// new one from the feed, not only from the sweep (docs/CLUSTER.md, "The path of an update").

// An edit that reaches another process's editor within PROMPT_MS of its ACK came by the feed, not
// the sweep: typed over a span longer than PROMPT_MS, a run of edits cannot all be brought by one
// sweep within it.
const PROMPT_MS = 1500
assert.ok(PROMPT_MS < SWEEP_INTERVAL_MS, 'the bound tells the feed from the sweep only while it is shorter')

const sleep = (/** @type {number} */ ms) => new Promise(resolve => setTimeout(resolve, ms))

/**
 * An editor typing a unique token every `everyMs` until stopped or disconnected, at the end of its
 * text or at its start; `pipelined` sends each edit without waiting for the ACK of the one before,
 * so several are in flight at once. Keeps each acknowledged token with the time its ACK came.
 * @param {TestEditor} editor @param {string} doc @param {string} tag
 * @param {{ everyMs: number, atStart?: boolean, pipelined?: boolean }} options
 */
function typist (editor, doc, tag, { everyMs, atStart = false, pipelined = false }) {
  /** @type {{ token: string, at: number }[]} */
  const acked = []
  /** @type {Record<string, number>} why edits were not acknowledged: error code, or `no reply` */
  const refused = {}
  /** @type {Promise<void>[]} */
  const sent = []
  let inFlight = 0
  const typing = new AbortController()
  /** @param {string} token */
  const send = async (token) => {
    inFlight++
    // The edit is made locally at once; a refused or unanswered one is simply not acknowledged.
    const reply = await editor.insert(doc, atStart ? 0 : editor.text(doc).length, token).catch(() => null)
    inFlight--
    if (reply?.ok) acked.push({ token, at: performance.now() })
    else {
      const why = reply?.error?.code ?? 'no reply'
      refused[why] = (refused[why] ?? 0) + 1
    }
  }
  const done = (async () => {
    // Bounded by `stop()`, which every test calls once enough edits are acknowledged, or by the socket dropping.
    for (let i = 0; !typing.signal.aborted && editor.socket.connected; i++) {
      const sending = send(`<${tag}${i}>`)
      if (pipelined) sent.push(sending)
      else await sending
      await sleep(everyMs)
    }
  })()
  return {
    acked,
    /** What it did, for a failure's message. */
    describe: () => `${tag}: ${acked.length} acknowledged, refused ${JSON.stringify(refused)}, ${editor.socket.connected ? 'connected' : 'disconnected'}`,
    tokens: () => acked.map(edit => edit.token),
    /** edits sent and not answered yet */
    inFlight: () => inFlight,
    stop: async () => {
      typing.abort()
      await done
      await Promise.all(sent)
    }
  }
}

/**
 * When each token of `tag` first appeared in an editor's text: those already there count as seen
 * now, each later one when the update that brought it was applied.
 * @param {TestEditor} editor @param {string} doc @param {string} tag
 */
function arrivals (editor, doc, tag) {
  const pattern = new RegExp(`<${tag}\\d+>`, 'g')
  /** @type {Map<string, number>} */
  const seen = new Map()
  const scan = () => {
    const now = performance.now()
    for (const [token] of editor.text(doc).matchAll(pattern)) if (!seen.has(token)) seen.set(token, now)
  }
  editor.ydoc(doc).on('update', scan)
  scan()
  return seen
}

/**
 * The edits that reached an editor later than PROMPT_MS after their ACK, or after `since` (the
 * editor joined) when that is later, as `token after N ms`.
 * @param {{ token: string, at: number }[]} edits @param {Map<string, number>} seen @param {number} since
 */
function late (edits, seen, since) {
  return edits.flatMap(({ token, at }) => {
    const ms = (seen.get(token) ?? Infinity) - Math.max(at, since)
    if (ms <= PROMPT_MS) return []
    return [ms === Infinity ? `${token} never` : `${token} after ${Math.round(ms)} ms`]
  })
}

/** @typedef {'sharded' | 'classic'} Adapter the Socket.IO Redis adapter a process runs (REDIS_ADAPTER) */

/** @param {string} text @param {string[]} tokens */
const absent = (text, tokens) => tokens.filter(token => !text.includes(token))

describe('editors on several server processes sharing one Redis', { skip: missing('redis-server') }, () => {
  /** @type {Awaited<ReturnType<typeof startRedis>>} */
  let redis
  /** @type {import('ioredis').Redis} */
  let admin
  /** @type {Record<'A' | 'B' | 'C', Awaited<ReturnType<typeof startChildServer>>>} */
  const servers = /** @type {any} */ ({})

  /** @type {Map<string, Awaited<ReturnType<typeof startChildServer>>>} every process started, by name */
  const started = new Map()
  /**
   * A process on the suite's Redis, named `name` in /metrics. Edits as fast as ACKs return, content
   * read often while waiting; a document without editors unloads soon after, so a test can watch a
   * process let go of it.
   * @param {string} name @param {Adapter} [adapter]
   */
  async function startProcess (name, adapter = 'sharded') {
    const server = await startChildServer({
      REDIS_URL: redis.url, REDIS_ADAPTER: adapter, NODE_NAME: name, UPDATES_PER_SECOND: '0', REST_PER_MINUTE: '0', DOC_IDLE_MS: '300'
    })
    started.set(name, server)
    return server
  }

  before(async () => {
    redis = await startRedis()
    admin = redis.client()
    ;[servers.A, servers.B, servers.C] = await Promise.all(/** @type {const} */ (['A', 'B', 'C']).map(name => startProcess(name)))
  })
  after(async () => {
    for (const server of Object.values(servers)) await server.stop('SIGKILL')
    await admin?.quit()
    await redis?.remove()
  })

  /**
   * How many connections Redis counts on a document's feed channel (docs/CLUSTER.md names it;
   * SSUBSCRIBE with the sharded adapter, SUBSCRIBE with the classic one): one per process holding it.
   * @param {string} doc @param {Adapter} [adapter]
   */
  async function feedSubscribers (doc, adapter = 'sharded') {
    const reply = await admin.call('PUBSUB', adapter === 'sharded' ? 'SHARDNUMSUB' : 'NUMSUB', `tandem:{doc:${doc}}:feed`)
    return /** @type {[string, number]} */ (reply)[1]
  }

  /**
   * Documents each process holds in memory, from one scrape of /metrics, which every process sharing
   * the scraped one's adapter answers. @param {{ url: string }} [via]
   */
  async function documentsLoaded (via = servers.A) {
    const { body } = await api(via.url, '/metrics')
    /** @type {Record<string, number>} */
    const loaded = {}
    for (const [, name, count] of String(body).matchAll(/^tandem_documents_loaded\{worker="([^/"]+)\/\d+"\} (\d+)$/gm)) loaded[name] = Number(count)
    return loaded
  }

  /** What the processes logged at warn or above, for a failure's message. */
  function serverWarnings () {
    const lines = [...started].flatMap(([name, server]) => server.logs.filter(entry => entry.level >= 40)
      .map(entry => `${name}: ${entry.msg}${entry.err ? ` (${entry.err.message ?? entry.err})` : ''}`))
    return lines.length ? `; the processes logged: ${lines.slice(-20).join('; ')}` : '; no process logged a warning'
  }

  /**
   * Resolves once every typist has `count` edits acknowledged; fails saying what each did.
   * @param {ReturnType<typeof typist>[]} typists @param {(typing: ReturnType<typeof typist>) => number} count @param {string} what
   */
  async function acknowledged (typists, count, what) {
    await eventually(() => typists.every(typing => typing.acked.length >= count(typing)), { timeoutMs: 20000, what }).catch((err) => {
      assert.fail(`${err.message}: ${typists.map(typing => typing.describe()).join('; ')}${serverWarnings()}`)
    })
  }

  /** Editors made in a test, closed after it. @param {(cleanup: () => unknown) => void} defer */
  function editorsOf (defer) {
    return (/** @type {{ url: string }} */ server) => {
      const editor = new TestEditor(server.url)
      defer(() => editor.close())
      return editor
    }
  }

  /**
   * Resolves once every editor holds the same text as every process serves, with every acknowledged
   * edit in it; fails naming what is missing where.
   * @param {string} doc @param {TestEditor[]} editors @param {{ url: string }[]} readers processes whose REST content must equal it
   * @param {string[]} acked
   */
  async function converged (doc, editors, readers, acked) {
    const state = async () => {
      const served = await Promise.all(readers.map(server => contentOf(server.url, doc)))
      return { served, texts: editors.map(editor => editor.text(doc)) }
    }
    await eventually(async () => {
      const { served, texts } = await state()
      return [...served, ...texts].every(text => text === served[0]) && absent(served[0], acked).length === 0
    }, { timeoutMs: 15000, intervalMs: 100, what: 'every editor and every process holding the same text with every acknowledged edit' }).catch(async (err) => {
      const { served, texts } = await state()
      assert.fail(`${err.message}: the processes lack ${served.map(text => absent(text, acked).length).join(', ')} and the editors ` +
        `${texts.map(text => absent(text, acked).length).join(', ')} of ${acked.length} acknowledged edits; ` +
        `${texts.filter(text => text !== served[0]).length} of ${texts.length} editors differ from the first process${serverWarnings()}`)
    })
    for (const editor of editors) assert.equal(editor.ydoc(doc).store.pendingStructs, null, 'no editor holds updates it cannot integrate')
  }

  for (const names of /** @type {const} */ ([['A', 'B'], ['A', 'B', 'C']])) {
    it(`makes editors typing at once on ${names.length} processes converge on one text holding every acknowledged edit, which every process serves`, async (t) => {
      const defer = deferrals(t)
      const editorOn = editorsOf(defer)
      const processes = names.map(name => servers[name])
      const session = await createSession(processes[0].url)
      // Two editors per process: one types at the end of the text, one at its start.
      const editors = processes.flatMap(server => [editorOn(server), editorOn(server)])
      for (const editor of editors) assert.equal((await editor.join(session.id)).ok, true)
      const typists = editors.map((editor, i) => typist(editor, session.id, `e${i}.`, { everyMs: 15, atStart: i % 2 === 1 }))
      // Counted, not timed: a busy machine still sends enough edits to interleave.
      await acknowledged(typists, () => 25, '25 edits acknowledged to each editor')
      for (const typing of typists) await typing.stop()

      await converged(session.id, editors, processes, typists.flatMap(typing => typing.tokens()))
    })
  }

  for (const adapter of /** @type {const} */ (['sharded', 'classic'])) {
    it(`brings a late joiner on another process every acknowledged edit, then each new one within 1.5 s of its ACK, and again after its process unloaded the document (${adapter} adapter)`, async (t) => {
      const defer = deferrals(t)
      const editorOn = editorsOf(defer)
      // The suite's processes use the sharded adapter; two more on the same Redis use the classic one.
      const [writing, joining] = adapter === 'sharded'
        ? [servers.A, servers.C]
        : await Promise.all([startProcess('classic-A', adapter), startProcess('classic-C', adapter)])
      if (adapter === 'classic') defer(() => Promise.all([writing.stop('SIGKILL'), joining.stop('SIGKILL')]))
      const joiningName = adapter === 'sharded' ? 'C' : 'classic-C'
      const session = await createSession(writing.url)
      const writer = editorOn(writing)
      assert.equal((await writer.join(session.id)).ok, true)
      const typing = typist(writer, session.id, 'a', { everyMs: 100 })
      defer(() => typing.stop())
      await acknowledged([typing], () => 10, 'edits acknowledged while the writer\'s process alone holds the document')
      assert.equal(await feedSubscribers(session.id, adapter), 1, 'the writer\'s process alone holds the document before anyone joins elsewhere')

      /** @type {TestEditor | undefined} */
      let joiner
      for (const round of ['first join', 'rejoin after the unload']) {
        joiner = editorOn(joining)
        const ackedBefore = typing.acked.length
        assert.equal((await joiner.join(session.id)).ok, true)
        const joinedAt = performance.now()
        const seen = arrivals(joiner, session.id, 'a')
        const lacking = absent(joiner.text(session.id), typing.tokens().slice(0, ackedBefore))
        assert.deepEqual(lacking, [], `${round}: edits acknowledged before the join missing from the joiner's copy`)

        // Typed past the join for longer than PROMPT_MS: one sweep could not bring them all promptly.
        const from = typing.acked.length
        await acknowledged([typing], () => from + 15, `${round}: edits acknowledged after the join`)
        await eventually(() => performance.now() - joinedAt > 2 * PROMPT_MS, { what: `${round}: typing for ${2 * PROMPT_MS} ms after the join` })
        const watched = typing.acked.slice(ackedBefore)
        // Longer than a sweep, so that edits the feed failed to bring show up late rather than missing.
        await eventually(() => watched.every(({ token }) => seen.has(token)), { timeoutMs: 2 * SWEEP_INTERVAL_MS, what: `${round}: the edits at the joiner` })
          .catch(() => {})
        assert.deepEqual(late(watched, seen, joinedAt), [],
          `${round}: edits made on one process reached the editor on another more than ${PROMPT_MS} ms after their ACK; ` +
          `the feed should bring each at once (the ${SWEEP_INTERVAL_MS} ms sweep is only a fallback)`)

        if (round === 'first join') {
          joiner.close()
          await eventually(async () => await feedSubscribers(session.id, adapter) === 1 && (await documentsLoaded(joining))[joiningName] === 0,
            { what: 'the joiner\'s process unloading the document once its editor left' })
          // Written while the writer's process alone holds the document again.
          const unloadedAt = typing.acked.length
          await acknowledged([typing], () => unloadedAt + 5, 'edits acknowledged while the joiner\'s process holds nothing')
        }
      }
      await typing.stop()
      await converged(session.id, [writer, /** @type {TestEditor} */ (joiner)], [writing, joining], typing.tokens())
    })
  }

  it('lets the editors of a document held by one process see each other\'s edits promptly, while another process holding other documents never holds or relays it', async (t) => {
    const defer = deferrals(t)
    const editorOn = editorsOf(defer)
    await eventually(async () => (await documentsLoaded()).B === 0, { what: 'process B letting go of the documents of earlier tests' })
    const [alone, elsewhere, shared] = [await createSession(servers.A.url), await createSession(servers.B.url), await createSession(servers.B.url)]
    const onA = [editorOn(servers.A), editorOn(servers.A), editorOn(servers.A)]
    for (const editor of onA) assert.equal((await editor.join(alone.id)).ok, true)
    // B holds two documents: one only it holds, one it shares with A (so B is busy on the feed).
    const onB = [editorOn(servers.B), editorOn(servers.B), editorOn(servers.B)]
    assert.equal((await onB[0].join(elsewhere.id)).ok, true)
    assert.equal((await onB[1].join(elsewhere.id)).ok, true)
    assert.equal((await onB[2].join(shared.id)).ok, true)
    const sharer = editorOn(servers.A)
    assert.equal((await sharer.join(shared.id)).ok, true)

    const seen = onA.map(editor => onA.map((_, i) => arrivals(editor, alone.id, `a${i}.`)))
    const typists = [
      ...onA.map((editor, i) => typist(editor, alone.id, `a${i}.`, { everyMs: 20, atStart: i === 1 })),
      typist(onB[0], elsewhere.id, 'b0.', { everyMs: 20 }),
      typist(onB[1], elsewhere.id, 'b1.', { everyMs: 20 }),
      typist(onB[2], shared.id, 'b2.', { everyMs: 20 }),
      typist(sharer, shared.id, 's.', { everyMs: 20 })
    ]
    // Redis's count of the document's subscribers, sampled while everyone types.
    const subscribers = new Set()
    const sampled = new AbortController()
    const sampling = (async () => {
      // Bounded: stopped below once the edits are in, or the wait for them failed.
      while (!sampled.signal.aborted) {
        subscribers.add(await feedSubscribers(alone.id))
        await sleep(50)
      }
    })()
    try {
      await acknowledged(typists, () => 40, '40 edits acknowledged to each editor')
    } finally {
      sampled.abort()
      await sampling
    }
    const loaded = await documentsLoaded()
    for (const typing of typists) await typing.stop()

    const acked = typists.slice(0, onA.length).map(typing => typing.acked)
    await converged(alone.id, onA, [servers.A], acked.flat().map(edit => edit.token))
    for (const j of onA.keys()) {
      for (const [i, edits] of acked.entries()) {
        if (i === j) continue
        assert.deepEqual(late(edits, seen[j][i], 0), [], `edits of A's editor ${i} reached A's editor ${j} more than ${PROMPT_MS} ms after their ACK`)
      }
    }
    assert.deepEqual([...subscribers], [1], 'only process A ever subscribed to the document\'s feed')
    assert.equal(await feedSubscribers(alone.id), 1)
    assert.equal(loaded.B, 2, 'process B held only its own two documents while everyone typed')
    for (const editor of onB) {
      assert.equal(editor.received.filter(({ payload }) => payload?.doc === alone.id).length, 0, 'no editor on B heard of the document')
    }
    await converged(shared.id, [onB[2], sharer], [servers.A, servers.B], typists.slice(-2).flatMap(typing => typing.tokens()))
  })

  it('keeps every acknowledged edit of both processes when one is killed with SIGKILL while its editors\' edits are in flight', async (t) => {
    const defer = deferrals(t)
    const editorOn = editorsOf(defer)
    const victim = await startProcess('V')
    defer(() => victim.stop('SIGKILL'))
    const session = await createSession(servers.A.url)
    const onA = [editorOn(servers.A), editorOn(servers.A)]
    const onVictim = [editorOn(victim), editorOn(victim)]
    for (const editor of [...onA, ...onVictim]) assert.equal((await editor.join(session.id)).ok, true)
    // Each sent without waiting for the ACK before it, so a kill finds several in flight.
    const typistsA = onA.map((editor, i) => typist(editor, session.id, `a${i}.`, { everyMs: 10, atStart: i === 1, pipelined: true }))
    const typistsV = onVictim.map((editor, i) => typist(editor, session.id, `v${i}.`, { everyMs: 5, atStart: i === 1, pipelined: true }))

    // Killed in the same turn as the check: the victim's editors then wait on at least one ACK.
    await eventually(() => typistsV.every(typing => typing.acked.length >= 30) && typistsV.some(typing => typing.inFlight() > 0),
      { timeoutMs: 20000, intervalMs: 1, what: 'edits acknowledged by the victim, with more in flight' })
    const inFlight = typistsV.reduce((sum, typing) => sum + typing.inFlight(), 0)
    victim.child.kill('SIGKILL')
    assert.equal((await victim.exited).signal, 'SIGKILL')
    for (const typing of typistsV) await typing.stop()
    // A's editors go on typing after the kill.
    const ackedAtKill = typistsA.map(typing => typing.acked.length)
    await acknowledged(typistsA, typing => ackedAtKill[typistsA.indexOf(typing)] + 20, 'edits acknowledged on A after the kill')
    for (const typing of typistsA) await typing.stop()
    assert.equal(servers.A.child.exitCode, null, `process A exited: ${servers.A.output.stderr}`)

    const acked = [...typistsA, ...typistsV].flatMap(typing => typing.tokens())
    assert.ok(inFlight > 0, 'the victim was killed with edits of its editors in flight')
    const fresh = await startProcess('F')
    defer(() => fresh.stop('SIGKILL'))
    const reader = editorOn(fresh)
    assert.equal((await reader.join(session.id)).ok, true)
    const lost = absent(reader.text(session.id), acked)
    assert.deepEqual(lost, [], `${lost.length} of ${acked.length} acknowledged edits missing from a fresh process's copy (${inFlight} were in flight at the kill)`)
    await converged(session.id, [reader, ...onA], [fresh, servers.A], acked)
  })
})
