import { now, sleepUntil } from './clock.js'
import { layout } from './edits/regions.js'
import { SyntheticEdits } from './edits/synthetic.js'
import { summarizeLevel } from './level-result.js'
import { assignThreads, planRooms, roomSizesOf, workerCount } from './plan.js'
import { WorkerPool } from './pool.js'
import { ProcessProbe } from './process-stats.js'
import { watchProgress } from './progress-watch.js'
import { SendLog } from './send-log.js'
import { serverStats } from './server-stats.js'

// One level of the sweep: open its rooms, connect and sync its editors, edit through the warm-up
// and the measured window, wait for every ACK and broadcast (each wait bounded by the ACK timeout),
// check convergence, then tear everything down.
// Spread of connection starts outside a join storm: 20 ms per editor, at most 2 s.
const RAMP_PER_EDITOR_MS = 20
const MAX_RAMP_MS = 2000
const DRAIN_POLL_MS = 50

/**
 * @typedef {object} LevelContext
 * @property {Readonly<import('./options.js').Options>} options
 * @property {import('./target.js').Target} target the system under test
 * @property {import('./edits/trace.js').Trace | null} trace
 * @property {(progress: Progress) => void} onProgress
 * @property {import('./spawn.js').NamedPid[]} [serverProcesses] the server's processes on this machine (Redis
 *   included), whose CPU and RSS /proc shows over the window, summed
 * @property {'all' | 'sample' | 'none'} [apply] editors that apply what they receive (default: the
 *   options' `apply`): all, the first of each room, or none; the others only time it, and
 *   convergence is checked for those that apply
 * @property {() => Promise<void>} [afterLeave] runs once every editor has disconnected, before the
 *   sessions are deleted (a soak waits there for the documents to unload)
 * @property {(edge: 'start' | 'end') => Promise<void>} [onWindow] awaited as the measured window opens
 *   and as it closes, before each /metrics scrape (the scale bench reads Redis's command counts there)
 */

/**
 * @typedef {object} Progress
 * @property {number} editors
 * @property {string} phase
 * @property {number} [elapsedMs] into the phase
 * @property {number} [phaseMs] length of the phase
 * @property {number | null} [ackP99] over the last second, ms
 * @property {number | null} [broadcastP99] over the last second, ms
 * @property {number} [sent]
 * @property {number} [errors]
 */

/**
 * @param {LevelContext} context
 * @param {number} editors
 */
export async function runLevel (context, editors) {
  const { options, target, onProgress } = context
  const plan = planRooms(editors, options.perRoom)
  const roomSizes = roomSizesOf(editors, options.perRoom)
  // Yjs clientIDs are 32-bit; a random base keeps them apart from the server's seed client. The
  // client after the last editor writes the rooms' starting text where editors apply it themselves.
  const clientBase = 1 + Math.floor(Math.random() * (2 ** 31 - editors - 2))

  onProgress({ editors, phase: 'creating sessions' })
  const rooms = await target.openRooms(roomSizes.map((size, room) => ({
    name: `loadtest ${editors} editors, room ${room + 1}`,
    text: seedContent(context, size),
    size
  })), clientBase + editors)
  const load = { editors, perRoom: options.perRoom, rate: options.rate, awarenessRate: options.awarenessRate }
  const threads = assignThreads(editors, workerCount(options.workers, load))
  const sendLog = SendLog.create(editors, options.rate * (options.ackTimeoutMs / 1000 + 2))
  const pool = new WorkerPool(threads.length, worker => ({
    worker,
    protocolModule: target.protocolModule,
    urls: target.urls,
    placement: target.placement ?? 'editors',
    token: options.token,
    rate: options.rate,
    awarenessRate: options.awarenessRate,
    ackTimeoutMs: options.ackTimeoutMs,
    payload: options.payload,
    trace: options.trace,
    clientBase,
    editorCount: editors,
    apply: context.apply ?? options.apply,
    sendLog: sendLog.buffers
  }))
  try {
    return await drive({ context, editors, plan, rooms, roomSizes, threads, pool })
  } finally {
    await pool.all('close').catch(() => {})
    await pool.terminate()
    await context.afterLeave?.()
    if (!options.keepSessions) await target.closeRooms(rooms)
  }
}

/**
 * @param {object} level
 * @param {LevelContext} level.context
 * @param {number} level.editors
 * @param {ReturnType<typeof planRooms>} level.plan
 * @param {import('./target.js').Room[]} level.rooms
 * @param {number[]} level.roomSizes
 * @param {number[][]} level.threads
 * @param {WorkerPool} level.pool
 */
async function drive ({ context, editors, plan, rooms, roomSizes, threads, pool }) {
  const { options, target, onProgress } = context

  onProgress({ editors, phase: 'connecting' })
  const rampMs = options.joinStorm ? 0 : Math.min(MAX_RAMP_MS, editors * RAMP_PER_EDITOR_MS)
  const joinAt = now() + 50
  const joins = await pool.all('join', worker => ({
    rooms: roomsOf(rooms, plan, threads[worker]),
    editors: threads[worker].map(index => ({ index, room: plan[index].room, slot: plan[index].slot, slots: plan[index].slots })),
    at: joinAt,
    rampMs
  }))
  const joined = new Set(joins.flatMap(reply => reply.joined))
  /** @type {Record<string, number>} */
  const joinFailures = {}
  for (const reply of joins) for (const [reason, count] of Object.entries(reply.failures)) joinFailures[reason] = (joinFailures[reason] ?? 0) + /** @type {number} */ (count)

  // Every edit the schedule can ask for: one per interval from a start within the first interval.
  onProgress({ editors, phase: 'preparing edits' })
  await pool.all('prepare', { edits: Math.ceil((options.warmupMs + options.durationMs) * options.rate / 1000) + 1 })

  const startAt = now() + 50
  const measureFrom = startAt + options.warmupMs
  const stopAt = measureFrom + options.durationMs
  const live = watchProgress(pool, threads.length)
  const probe = context.serverProcesses?.length ? new ProcessProbe(context.serverProcesses) : null
  await pool.all('start', { startAt, measureFrom, stopAt })

  const ticker = setInterval(() => {
    const t = now()
    if (t >= measureFrom) probe?.sample()
    const warming = t < measureFrom
    onProgress({
      editors,
      phase: warming ? 'warm-up' : 'measuring',
      elapsedMs: warming ? t - startAt : t - measureFrom,
      phaseMs: warming ? options.warmupMs : options.durationMs,
      ...live.snapshot()
    })
  }, 1000)
  // The window ends at stopAt, or earlier once every editor has run out of trace.
  const early = new AbortController()
  live.allFinished.then(() => early.abort())
  let before, after, windowStart, windowEnd, cpuBefore, cpuAfter, serverProcess
  try {
    await sleepUntil(measureFrom, early.signal)
    // The window is timed from here, not from after the scrape: a loaded server can take seconds to
    // answer /metrics (the scrapes carry their own timestamps).
    windowStart = now()
    cpuBefore = process.cpuUsage()
    probe?.open()
    await context.onWindow?.('start')
    before = await target.scrape()
    await sleepUntil(stopAt, early.signal)
    windowEnd = now()
    cpuAfter = process.cpuUsage(cpuBefore)
    serverProcess = probe?.close() ?? null
    await context.onWindow?.('end')
    after = await target.scrape()
  } finally {
    clearInterval(ticker)
    early.abort()
  }

  onProgress({ editors, phase: 'draining' })
  const stops = await pool.all('stop')
  const sentBy = new Map(stops.flatMap(reply => reply.sent.map((/** @type {{ index: number, sent: number }} */ s) => [s.index, s.sent])))
  const joinedInRoom = roomSizes.map((_, room) => plan.filter((editor, index) => editor.room === room && joined.has(index)).length)
  let expected = 0
  for (const [index, sent] of sentBy) expected += sent * Math.max(0, joinedInRoom[plan[index].room] - 1)
  const drainUntil = now() + options.ackTimeoutMs
  while (now() < drainUntil) {
    const received = (await pool.all('received')).reduce((total, reply) => total + reply.received, 0)
    if (received >= expected) break
    await sleepUntil(now() + DRAIN_POLL_MS)
  }

  onProgress({ editors, phase: 'checking convergence' })
  const parts = await pool.all('collect')
  const convergence = (context.apply ?? options.apply) === 'none'
    ? { converged: null, rooms: rooms.length, diverged: 0, editors: joined.size }
    : await target.checkConvergence(pool, rooms, plan)

  const windowMs = Math.max(1, windowEnd - windowStart)
  const cpuPercent = (cpuAfter.user + cpuAfter.system) / 1000 / windowMs * 100
  return summarizeLevel({ options, editors, roomSizes, threads: threads.length, rampMs, joined: joined.size, joinFailures, expected, parts, windowMs, cpuPercent, server: serverStats(before, after), serverProcess, convergence })
}

/**
 * The rooms a thread's editors are in, as its join request carries them: each room's seed only
 * once per thread, however many of its editors the thread runs (other rooms as placeholders).
 * @param {import('./target.js').Room[]} rooms
 * @param {ReturnType<typeof planRooms>} plan
 * @param {number[]} editors the thread's
 */
function roomsOf (rooms, plan, editors) {
  const used = new Set(editors.map(index => plan[index].room))
  return rooms.map((room, i) => used.has(i) ? room : { id: room.id, seed: null, token: null })
}

/**
 * The text a room's document starts with: one region per editor (see edits/regions.js).
 * @param {LevelContext} context
 * @param {number} size editors in the room
 */
function seedContent ({ options, trace }, size) {
  const region = trace ? trace.startContent : SyntheticEdits.seed(Math.floor(options.docSize / size))
  return layout(Array.from({ length: size }, () => region))
}
