import { Cluster, Redis } from 'ioredis'

// Redis connections. Every client gets an `error` listener (an unhandled one would kill the
// process) and fails commands fast while disconnected instead of queueing them: an update that
// cannot reach Redis is refused with UNAVAILABLE at once and the client resends it later.

/** How long a command may wait for its reply, ms: a paused or asleep Redis answers nothing. */
export const COMMAND_TIMEOUT_MS = 5000

/**
 * @typedef {Redis | Cluster} RedisClient
 */

/**
 * Seed nodes of a Redis Cluster from the config, or undefined for a single Redis.
 * @param {Pick<import('../config.js').Config, 'redisUrl' | 'redisClusterNodes'>} config
 */
function clusterNodes (config) {
  if (config.redisClusterNodes.length > 0) return config.redisClusterNodes
  if (config.redisUrl.startsWith('redis+cluster://')) return config.redisUrl.slice('redis+cluster://'.length).split(',')
  return undefined
}

/**
 * Opens one Redis connection (or Cluster client) for `role`; resolves once it is ready or after
 * `readyTimeoutMs` (the process then starts not ready and recovers when Redis appears).
 * @param {Pick<import('../config.js').Config, 'redisUrl' | 'redisClusterNodes'>} config
 * @param {string} role names the connection in logs
 * @param {import('pino').Logger} logger
 * @param {{ subscriber?: boolean, readyTimeoutMs?: number }} [options]
 * @returns {Promise<RedisClient>}
 */
export async function connectRedis (config, role, logger, { subscriber = false, readyTimeoutMs = 5000 } = {}) {
  const log = logger.child({ redis: role })
  // A subscriber must queue its (re)subscriptions until connected, so it has no command timeout
  // (the feed bounds its own subscribes: redis-doc-feed.js); command clients fail fast.
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

/**
 * Runs a MULTI block; rejects if it or any command in it failed, else resolves with the replies.
 * @param {import('ioredis').ChainableCommander} multi
 * @returns {Promise<unknown[]>}
 */
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
