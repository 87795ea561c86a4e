import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { TandemApi } from './api.js'
import { now, sleepUntil } from './clock.js'

// Starts the server under test on this machine, so one command on a fresh checkout produces a report:
// `single` runs `node server/index.js` (embedded LevelDB); `cluster` runs one redis-server and
// `clusterWorkers` plain `node server/index.js` processes sharing it, each on its own port, as
// separate hosts or a non-sticky balancer's backends would be. Everything listens on a free loopback
// port with its data in a temp directory, and `stop()` undoes everything. Like any client, it imports
// nothing from server/: the Node.js options come from `npm start`'s script, SYNC_WRITES from the
// environment it passes on. A caller may have the servers keep history (`historyRetention`), which
// HISTORY_RETENTION in the environment overrides, so a run can measure a server without it.

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const READY_TIMEOUT_MS = 60000
const STOP_TIMEOUT_MS = 15000
const OUTPUT_TAIL_CHARS = 4000
const ENTRY = 'server/index.js'

/** @typedef {{ name: string, pid: number }} NamedPid a process whose CPU and RSS /proc shows */

/**
 * @typedef {object} SpawnedServer
 * @property {string} url the first server process: REST calls and /metrics (which covers every process sharing its Redis)
 * @property {string[]} urls every server process, in order; editors connect to them by slot (spread.js)
 * @property {string} description
 * @property {NamedPid[]} pids every process of the server under test: each server process, and Redis
 * @property {string} [redisUrl] the Redis the processes share (`cluster`)
 * @property {number} [workers] processes serving (a Tandem server)
 * @property {boolean | null} [syncWrites] the SYNC_WRITES the server runs with (a Tandem server)
 * @property {() => Promise<void>} stop
 */

// Every simulated editor connects from 127.0.0.1, so per-IP limits would treat them all as one
// client; a spawned server turns those off. Per-connection limits stay at their defaults.
const PER_IP_LIMITS_OFF = { MAX_CONNECTIONS_PER_IP: '0', CONNECTIONS_PER_MINUTE: '0', JOINS_PER_MINUTE: '0', REST_PER_MINUTE: '0' }

// Redis as docs/CLUSTER.md and docs/DEPLOYMENT.md's PM2 cluster configure it: the append-only file, fsynced
// every second, so its cost is part of what is measured.
const REDIS_PERSISTENCE = ['--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '']

/**
 * The Node.js options of package.json's start script, `node [--option ...] server/index.js`, with
 * which every spawned server runs (test/loadtest-spawn.test.js holds them equal to the server's).
 */
export const SERVER_NODE_OPTIONS = nodeOptionsOf(JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start)

/** @param {string} start @returns {readonly string[]} */
function nodeOptionsOf (start) {
  const words = start.trim().split(/\s+/)
  const options = words.slice(1, -1)
  if (words[0] !== 'node' || words.at(-1) !== ENTRY || !options.every(word => word.startsWith('--'))) {
    throw new Error(`package.json's start script is not \`node [--option ...] ${ENTRY}\`: ${start}`)
  }
  return Object.freeze(options)
}

/**
 * @typedef {object} SpawnOptions
 * @property {number} clusterWorkers
 * @property {string | null} apiKey
 * @property {string} [historyRetention] the servers' HISTORY_RETENTION, unless the environment sets one
 * @property {number} [appendSpacingMs] the Redis processes' REDIS_APPEND_SPACING_MS, over the environment's
 */

/**
 * @param {'single' | 'cluster'} mode
 * @param {SpawnOptions} options
 * @returns {Promise<SpawnedServer>}
 */
export async function spawnServer (mode, options) {
  return mode === 'cluster' ? spawnCluster(options) : spawnSingle(options)
}

/** @param {SpawnOptions} options */
async function spawnSingle (options) {
  const dir = await mkdtemp(join(tmpdir(), 'tandem-loadtest-'))
  const env = { ...PER_IP_LIMITS_OFF, ...historyOf(options), DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'warn' }
  const { url, server } = await startServerProcess(env, options.apiKey)
    .catch(async (err) => { await rm(dir, { recursive: true, force: true }); throw err })
  const stop = async () => {
    await server.stop('SIGINT')
    await rm(dir, { recursive: true, force: true })
  }
  return { url, urls: [url], description: 'single process (node server/index.js)', pids: pidsOf([server]), workers: 1, syncWrites: syncWritesOf(env), stop }
}

/**
 * One `node server/index.js` on a free loopback port, with `env` over this process's environment;
 * resolves once it is ready. A process that never gets ready is stopped.
 * @param {Record<string, string>} env
 * @param {string | null} [apiKey] for the readiness check, when the server wants one
 */
export async function startServerProcess (env, apiKey = null) {
  const port = await freePort()
  const server = startProcess('server', process.execPath, [...SERVER_NODE_OPTIONS, join(ROOT, ENTRY)], { ...env, PORT: String(port), HOST: '127.0.0.1' })
  const url = `http://127.0.0.1:${port}`
  await ready(url, apiKey, [server]).catch(async (err) => { await server.stop('SIGINT'); throw err })
  return { url, server }
}

/** @param {SpawnOptions} options */
async function spawnCluster (options) {
  const { clusterWorkers, apiKey } = options
  const dir = await mkdtemp(join(tmpdir(), 'tandem-loadtest-'))
  const redisPort = await freePort()
  const redis = startProcess('redis-server', 'redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', ...REDIS_PERSISTENCE, '--dir', dir], {})
  /** @type {ReturnType<typeof startProcess>[]} */
  const servers = []
  const stop = async () => {
    await Promise.all(servers.map(server => server.stop('SIGINT')))
    await redis.stop('SIGTERM')
    await rm(dir, { recursive: true, force: true })
  }
  try {
    // A port is free when asked, not reserved: ask again until each one differs from the others.
    const ports = [redisPort]
    while (ports.length <= clusterWorkers) {
      const port = await freePort()
      if (!ports.includes(port)) ports.push(port)
    }
    ports.shift()
    const redisUrl = `redis://127.0.0.1:${redisPort}`
    /** @type {Record<string, string>} */
    const spacing = options.appendSpacingMs === undefined ? {} : { REDIS_APPEND_SPACING_MS: String(options.appendSpacingMs) }
    const env = { ...PER_IP_LIMITS_OFF, ...historyOf(options), ...spacing, HOST: '127.0.0.1', REDIS_URL: redisUrl, LOG_LEVEL: 'warn' }
    for (const [i, port] of ports.entries()) {
      servers.push(startProcess(`server ${i}`, process.execPath, [...SERVER_NODE_OPTIONS, join(ROOT, ENTRY)], {
        ...env,
        PORT: String(port),
        DATA_DIR: join(dir, `data-${i}`),
        // PM2's instance variable: it tells the processes' series apart in the `worker` label of /metrics.
        NODE_APP_INSTANCE: String(i)
      }))
    }
    const urls = ports.map(port => `http://127.0.0.1:${port}`)
    await Promise.all(urls.map(url => ready(url, apiKey, [redis, ...servers])))
    const plural = clusterWorkers === 1 ? '' : 'es'
    return { url: urls[0], urls, description: `${clusterWorkers} process${plural} (node server/index.js) sharing one Redis`, pids: pidsOf([...servers, redis]), redisUrl, workers: clusterWorkers, syncWrites: syncWritesOf(env), stop }
  } catch (err) {
    await stop()
    throw err
  }
}

/**
 * HISTORY_RETENTION for the servers, when the caller asks for history and the environment, which
 * the servers inherit, sets none of its own.
 * @param {SpawnOptions} options
 * @returns {Record<string, string>}
 */
function historyOf ({ historyRetention }) {
  return historyRetention === undefined || process.env.HISTORY_RETENTION !== undefined ? {} : { HISTORY_RETENTION: historyRetention }
}

/** @param {ReturnType<typeof startProcess>[]} processes @returns {NamedPid[]} */
function pidsOf (processes) {
  return processes.map(({ name, pid }) => ({ name, pid: /** @type {number} */ (pid) }))
}

// The words server/config.js reads SYNC_WRITES with (test/loadtest-spawn.test.js holds them equal).
const SYNC_WRITES = new Map([['true', true], ['1', true], ['yes', true], ['false', false], ['0', false], ['no', false], ['', false]])

/**
 * SYNC_WRITES as the spawned server reads it: this process's environment plus what the spawner
 * sets; null for a value the server refuses.
 * @param {Record<string, string | undefined>} env
 */
export function syncWritesOf (env) {
  return SYNC_WRITES.get(({ ...process.env, ...env }.SYNC_WRITES ?? '').trim()) ?? null
}

/**
 * A child process whose output tail is kept for error messages.
 * @param {string} name
 * @param {string} command
 * @param {string[]} args
 * @param {Record<string, string>} env
 */
export function startProcess (name, command, args, env) {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  let ended = false
  const keep = (/** @type {Buffer} */ chunk) => { output = (output + chunk).slice(-OUTPUT_TAIL_CHARS) }
  child.stdout.on('data', keep)
  child.stderr.on('data', keep)
  const exited = new Promise(resolve => {
    child.once('exit', (code, signal) => { ended = true; resolve({ code, signal }) })
    child.once('error', (err) => { ended = true; output += String(err); resolve({ code: -1, signal: null }) })
  })
  return {
    name,
    pid: child.pid ?? null,
    exited,
    get output () { return output },
    get running () { return !ended },
    /** Signals the process and waits for it to exit, killing it if it takes too long. @param {NodeJS.Signals} signal */
    async stop (signal) {
      if (ended) return
      child.kill(signal)
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS)
      await exited
      clearTimeout(timer)
    }
  }
}

/**
 * Resolves once GET /api/health answers 200 with `ready: true`; fails if a process exits first.
 * @param {string} url
 * @param {string | null} apiKey
 * @param {ReturnType<typeof startProcess>[]} processes
 */
async function ready (url, apiKey, processes) {
  const api = new TandemApi(url, apiKey)
  const deadline = now() + READY_TIMEOUT_MS
  while (now() < deadline) {
    const dead = processes.find(p => !p.running)
    if (dead) throw new Error(`${dead.name} exited before the server was ready:\n${dead.output}`)
    const health = await api.health().catch(() => null)
    if (health?.ready === true) return
    await sleepUntil(now() + 100)
  }
  throw new Error(`the server was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${processes.map(p => p.output).join('\n')}`)
}

/** A TCP port free on loopback right now. */
export async function freePort () {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
  server.close()
  await once(server, 'close')
  return port
}
