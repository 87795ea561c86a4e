import { execFile } from 'node:child_process'
import { createServer } from 'node:net'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { eventually } from './eventually.js'
import { freePort } from './processes.js'
import { tempDataDir } from './server.js'

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const PM2 = fileURLToPath(new URL('../../node_modules/.bin/pm2', import.meta.url))

/**
 * A real PM2 cluster started from ecosystem.config.js, exactly as `npm run cluster` starts it (or,
 * with `ports`, from ecosystem.ports.config.js as `npm run cluster:ports` does: worker i on the
 * port + i), with its own PM2_HOME so it touches no other PM2 on the machine.
 * @param {{ redisUrl: string, workers?: number, env?: Record<string, string>, ports?: boolean }} options
 */
export async function startCluster ({ redisUrl, workers = 2, env = {}, ports = false }) {
  const home = await tempDataDir()
  const port = ports ? await freePorts(workers) : await freePort()
  const file = ports ? 'ecosystem.ports.config.js' : 'ecosystem.config.js'
  const app = ports ? 'tandem-ports' : 'tandem'
  const urls = Array.from({ length: ports ? workers : 1 }, (_, i) => `http://127.0.0.1:${port + i}`)
  const pm2Env = {
    ...process.env,
    PM2_HOME: home.dir,
    REDIS_URL: redisUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    WORKERS: String(workers),
    LOG_LEVEL: 'warn',
    ...env
  }
  /** @param {...string} args */
  const pm2 = (...args) => run(PM2, args, { cwd: ROOT, env: pm2Env })
  const url = `http://127.0.0.1:${port}`

  /** Every worker online and the cluster answering ready. */
  async function ready () {
    await eventually(async () => {
      const online = (await list()).filter(p => p.status === 'online')
      if (online.length !== workers) return false
      for (const url of urls) {
        const res = await fetch(`${url}/api/health`).catch(() => null)
        if (!res?.ok || !(await res.json()).ready) return false
      }
      return true
    }, { timeoutMs: 30000, intervalMs: 100, what: 'PM2 cluster ready' })
  }

  /** @returns {Promise<{ pid: number, mode: string, instance: number, status: string, restarts: number }[]>} */
  async function list () {
    const { stdout } = await pm2('jlist')
    return JSON.parse(stdout).map((/** @type {any} */ p) => ({
      pid: p.pid,
      mode: p.pm2_env.exec_mode,
      instance: p.pm2_env.NODE_APP_INSTANCE,
      status: p.pm2_env.status,
      restarts: p.pm2_env.restart_time
    }))
  }

  await pm2('start', file)
  await ready()
  return {
    url,
    /** Every worker's own address with `ports`; else the one every worker shares. */
    urls,
    list,
    /** What the workers have written to standard output so far (PM2 merges their logs into one file). */
    output: () => readFile(join(home.dir, 'logs', `${app}-out.log`), 'utf8'),
    ready,
    /** Rolls every worker, one at a time, as `pm2 reload tandem` does in production. */
    reload: () => pm2('reload', app),
    /** Starts the whole cluster again after `stop`. */
    async start () {
      await pm2('start', file)
      await ready()
    },
    stop: () => pm2('delete', app),
    async remove () {
      await pm2('kill').catch(() => {})
      await home.remove()
    }
  }
}

/** The first of `count` consecutive loopback ports that are free right now. @param {number} count */
async function freePorts (count) {
  for (;;) {
    const first = await freePort()
    if (first + count > 65536) continue
    const free = await Promise.all(Array.from({ length: count - 1 }, (_, i) => isFree(first + 1 + i)))
    if (free.every(Boolean)) return first
  }
}

/** @param {number} port */
function isFree (port) {
  return new Promise(resolve => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}
