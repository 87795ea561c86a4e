import { Cluster, Redis } from 'ioredis'

// Every client has an `error` listener (unhandled, one kills the process) and fails commands fast
// while disconnected: an update that cannot reach Redis is refused at once, and resent later.

/** How long a command may wait for its reply: a paused or asleep Redis answers nothing. */
export const COMMAND_TIMEOUT_MS = 5000

/** @typedef {Redis | Cluster} RedisClient */

/** Seed nodes of a Redis Cluster, or undefined. @param {Pick<import('../config.js').Config, 'redisUrl' | 'redisClusterNodes'>} config */
function clusterNodes (config) {
  if (config.redisClusterNodes.length > 0) return config.redisClusterNodes
  if (config.redisUrl.startsWith('redis+cluster://')) return config.redisUrl.slice('redis+cluster://'.length).split(',')
  return undefined
}

/**
 * Resolves once ready, or after `readyTimeoutMs` (the process then starts not ready and recovers).
 * @param {Pick<import('../config.js').Config, 'redisUrl' | 'redisClusterNodes'>} config
 * @param {string} role names the connection in logs
 * @param {import('pino').Logger} logger @param {{ subscriber?: boolean, readyTimeoutMs?: number }} [options]
 */
export async function connectRedis (config, role, logger, { subscriber = false, readyTimeoutMs = 5000 } = {}) {
  const log = logger.child({ redis: role })
  // A subscriber queues its (re)subscriptions until connected (the feed bounds them itself).
  const common = {
    enableOfflineQueue: subscriber,
    maxRetriesPerRequest: subscriber ? null : 1,
    commandTimeout: subscriber ? undefined : COMMAND_TIMEOUT_MS,
    connectionName: `tandem-${role}`,
    retryStrategy: (/** @type {number} */ times) => Math.min(times * 100, 2000)
  }
  const nodes = clusterNodes(config)
  /** @type {RedisClient} */
  const client = nodes
    ? new Cluster(nodes.map(node => {
      const [host, port] = node.split(':')
      return { host, port: Number(port) }
    }), {
      enableOfflineQueue: common.enableOfflineQueue,
      clusterRetryStrategy: common.retryStrategy,
      // The sharded adapter's SSUBSCRIBE channels live on the master owning their slot.
      shardedSubscribers: subscriber,
      redisOptions: { maxRetriesPerRequest: common.maxRetriesPerRequest, commandTimeout: common.commandTimeout, connectionName: common.connectionName }
    })
    : new Redis(config.redisUrl, common)

  let lastError = ''
  client.on('error', (err) => {
    // One line per distinct error, not one per reconnect attempt.
    if (err.message !== lastError) log.warn({ err: err.message }, 'redis error')
    lastError = err.message
  })
  client.on('ready', () => {
    if (lastError) log.info('redis ready again')
    lastError = ''
  })
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, readyTimeoutMs)
    client.once('ready', () => {
      clearTimeout(timer)
      resolve(undefined)
    })
  })
  return client
}

/** Rejects if the MULTI or any command in it failed. @param {import('ioredis').ChainableCommander} multi */
export async function execMulti (multi) {
  const results = await multi.exec()
  if (!results) throw new Error('transaction aborted')
  return results.map(([err, value]) => {
    if (err) throw err
    return value
  })
}

/** @param {RedisClient} client */
export function isReady (client) {
  return client.status === 'ready'
}

/** Closes a client, waiting for pending replies when connected. @param {RedisClient} client */
export async function closeRedis (client) {
  if (client.status === 'ready') {
    await client.quit().catch(() => client.disconnect())
  } else {
    client.disconnect()
  }
}
