import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { promisify } from 'node:util'
import { eventually } from './eventually.js'
import { freePort } from './processes.js'
import { ping } from './redis.js'
import { tempDataDir } from './server.js'

const run = promisify(execFile)

/**
 * A real Redis Cluster of `masters` redis-servers on free loopback ports, joined with
 * `redis-cli --cluster create`, no replicas.
 * @param {{ masters?: number }} [options]
 */
export async function startRedisCluster ({ masters = 3 } = {}) {
  const data = await tempDataDir()
  /** @type {number[]} */
  const ports = []
  for (let i = 0; i < masters; i++) ports.push(await freePort())
  const children = ports.map(port => spawn('redis-server', [
    '--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
    '--cluster-config-file', `nodes-${port}.conf`, '--save', '', '--appendonly', 'yes',
    '--appendfilename', `appendonly-${port}.aof`, '--appenddirname', `aof-${port}`, '--dir', data.dir
  ], { stdio: 'ignore' }))
  for (const port of ports) await eventually(() => ping(port), { what: `redis-server on ${port}` })
  await run('redis-cli', ['--cluster', 'create', ...ports.map(port => `127.0.0.1:${port}`), '--cluster-replicas', '0', '--cluster-yes'])
  await eventually(async () => {
    const states = await Promise.all(ports.map(port => run('redis-cli', ['-p', String(port), 'cluster', 'info'])))
    return states.every(({ stdout }) => stdout.includes('cluster_state:ok'))
  }, { timeoutMs: 20000, what: 'cluster_state:ok' })
  return {
    nodes: ports.map(port => `127.0.0.1:${port}`),
    url: `redis+cluster://${ports.map(port => `127.0.0.1:${port}`).join(',')}`,
    /** The hash slot of `key`. @param {string} key */
    async slotOf (key) {
      const { stdout } = await run('redis-cli', ['-p', String(ports[0]), 'cluster', 'keyslot', key])
      return Number(stdout.trim())
    },
    async remove () {
      await Promise.all(children.map(async (child) => {
        if (child.exitCode !== null) return
        const exited = once(child, 'exit')
        child.kill('SIGTERM')
        await exited
      }))
      await data.remove()
    }
  }
}
