import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { connect } from 'node:net'
import { Redis } from 'ioredis'
import pino from 'pino'
import { RedisGuard } from '../../server/storage/redis-guard.js'
import { StorageHealth } from '../../server/storage/storage-health.js'
import { eventually } from './eventually.js'
import { freePort } from './processes.js'
import { tempDataDir } from './server.js'

/**
 * A real redis-server of the test's own, on a free loopback port, with append-only persistence in a
 * temp dir so it can be stopped and started again (fault injection) without losing what it acked.
 * @param {{ args?: string[] }} [options]
 */
export async function startRedis ({ args = [] } = {}) {
  const port = await freePort()
  const data = await tempDataDir()
  /** @type {import('node:child_process').ChildProcess | undefined} */
  let child

  async function start () {
    child = spawn('redis-server', [
      '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes',
      '--dir', data.dir, ...args
    ], { stdio: 'ignore' })
    await eventually(() => ping(port), { what: `redis-server on port ${port}` })
  }

  /** Stops Redis: SIGTERM (it saves what it holds) or SIGKILL (a crash: only what it fsynced survives). */
  async function stop (signal = /** @type {NodeJS.Signals} */ ('SIGTERM')) {
    if (!child || child.exitCode !== null) return
    const exited = once(child, 'exit')
    child.kill(signal)
    await exited
  }

  await start()
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    /** A client of this Redis for the test's own commands (CLIENT KILL, …); the caller quits it. */
    client: () => new Redis(port, '127.0.0.1'),
    async remove () {
      await stop()
      await data.remove()
    }
  }
}

/**
 * A guard of a store or seats built by a test, with a storage health of its own.
 * @param {import('../../server/storage/redis.js').RedisClient} client
 */
export function guardOf (client) {
  return new RedisGuard(client, { health: new StorageHealth(pino({ level: 'silent' }), { inc () {} }) })
}

/** Whether a Redis answers PING on `port`. @param {number} port */
export function ping (port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.setTimeout(500, () => { socket.destroy(); resolve(false) })
    socket.once('error', () => resolve(false))
    socket.once('connect', () => socket.write('PING\r\n'))
    socket.once('data', (data) => {
      socket.destroy()
      resolve(data.toString().startsWith('+PONG'))
    })
  })
}
