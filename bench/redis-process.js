import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { now, sleepUntil } from '../loadtest/clock.js'
import { freePort, startProcess } from '../loadtest/spawn.js'

// A redis-server of a bench's own, on a free loopback port, persisting as the deployment does (an
// append-only file fsynced every second, no RDB snapshots) into a temp directory that `stop` removes.

const PERSISTENCE = Object.freeze(['--appendonly', 'yes', '--appendfsync', 'everysec', '--save', ''])
const READY_TIMEOUT_MS = 10000

export async function startRedisServer () {
  const dir = await mkdtemp(join(tmpdir(), 'tandem-redis-'))
  const port = await freePort()
  const redis = startProcess('redis-server', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', ...PERSISTENCE, '--dir', dir], {})
  const url = `redis://127.0.0.1:${port}`
  const stop = async () => {
    await redis.stop('SIGTERM')
    await rm(dir, { recursive: true, force: true })
  }
  try {
    await answers(url, redis)
  } catch (err) {
    await stop()
    throw err
  }
  return { url, stop }
}

/**
 * Resolves once the server answers PING; fails if it exits first or takes too long.
 * @param {string} url @param {ReturnType<typeof startProcess>} redis
 */
async function answers (url, redis) {
  const deadline = now() + READY_TIMEOUT_MS
  while (now() < deadline) {
    if (!redis.running) throw new Error(`redis-server exited before it answered:\n${redis.output}`)
    const client = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 })
    client.on('error', () => {})
    const pong = await client.connect().then(() => client.ping(), () => null)
    client.disconnect()
    if (pong === 'PONG') return
    await sleepUntil(now() + 50)
  }
  throw new Error(`redis-server did not answer within ${READY_TIMEOUT_MS / 1000} s:\n${redis.output}`)
}
