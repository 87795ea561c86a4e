import { randomUUID } from 'node:crypto'
import { createAdapter, createShardedAdapter } from '@socket.io/redis-adapter'
import { usesRedis } from '../config.js'
import { StartError } from '../exit-codes.js'
import { LevelDocStore } from './level-doc-store.js'
import { LevelOutbox } from './level-outbox.js'
import { RedisDocFeed } from './redis-doc-feed.js'
import { RedisDocStore } from './redis-doc-store.js'
import { RedisGuard } from './redis-guard.js'
import { RedisOutbox } from './redis-outbox.js'
import { RedisSeats } from './redis-seats.js'
import { LocalSeats } from './seats.js'
import { LevelSessionStore } from './level-session-store.js'
import { RedisSessionStore } from './redis-session-store.js'
import { LevelGuard } from './level-guard.js'
import { closedCleanly, openLevel } from './level.js'
import { closeRedis, connectRedis, isReady } from './redis.js'

/**
 * @typedef {object} Backend
 * @property {string} storage what stores sessions and documents (`leveldb`, `redis`)
 * @property {string} broadcast what carries broadcasts between processes (`memory`, `redis-sharded`, `redis-classic`)
 * @property {import('./doc-store.js').DocStore} docStore
 * @property {import('./history-store.js').HistoryStore} historyStore what the document store's appends keep in history
 * @property {import('./session-store.js').SessionStore} sessionStore
 * @property {import('./seats.js').Seats} seats who holds a seat in which session
 * @property {import('./outbox.js').Outbox} outbox webhook deliveries not yet answered
 * @property {any} [adapter] the Socket.IO adapter constructor; absent = the in-memory default
 * @property {import('./redis.js').RedisClient} [limitStore] where per-IP rate limits are counted; absent = in memory
 * @property {import('./redis-doc-feed.js').RedisDocFeed} [feed] absent in one process
 * @property {() => boolean} [adapterReady] whether other processes can be asked (cluster.js); absent in one process
 * @property {() => boolean} isReady
 * @property {() => Promise<void>} close
 */

const SHARDED_PREFIX = 'tandem'

/**
 * Embedded LevelDB in one process, or Redis for everything when REDIS_URL or REDIS_CLUSTER_NODES is set.
 * @param {import('../config.js').Config} config @param {import('pino').Logger} logger
 * @param {import('./storage-health.js').StorageHealth} health told of every failed write
 * @returns {Promise<Backend>}
 */
export async function openBackend (config, logger, health) {
  if (!usesRedis(config)) {
    const db = await openLevel(config.dataDir, logger)
    const guard = new LevelGuard(db, { health, logger })
    const docStore = await LevelDocStore.open(guard, config, logger).catch(async (err) => {
      await guard.close()
      await db.close()
      throw err
    })
    return {
      storage: 'leveldb',
      broadcast: 'memory',
      docStore,
      historyStore: docStore.history,
      sessionStore: new LevelSessionStore(guard, config),
      seats: new LocalSeats(),
      outbox: new LevelOutbox(guard, { syncWrites: config.syncWrites, max: config.webhookOutboxMax }),
      isReady: () => guard.ready,
      close: async () => {
        // Only a database that took its last write leaves a log with no record cut short.
        await docStore.close()
        const clean = guard.ready
        await guard.close()
        await db.close()
        if (clean) await closedCleanly(config.dataDir, logger)
      }
    }
  }

  // Three connections: a broadcast must not queue behind XADDs, since the sharded adapter delivers even
  // to local sockets only once its SPUBLISH is answered. Connected together: one ready timeout, not three.
  // With webhooks, a fourth: sending them must not queue commands in front of an update's append.
  const [data, publisher, subscriber, sending] = await Promise.all([
    connectRedis(config, 'data', logger),
    connectRedis(config, 'pub', logger),
    connectRedis(config, 'sub', logger, { subscriber: true }),
    config.webhookSecret ? connectRedis(config, 'webhooks', logger) : undefined
  ])
  const clients = [subscriber, publisher, data]
  if (sending) clients.push(sending)
  const required = [
    ...(config.redisWaitAof ? [{ version: 702, what: 'REDIS_WAITAOF=true', uses: 'WAITAOF', instead: 'unset REDIS_WAITAOF' }] : []),
    // Webhooks wait for a Redis down at start, as editing does: checked only if it answers.
    ...(sending ? [{ version: 602, what: 'WEBHOOK_SECRET (webhooks)', uses: 'XAUTOCLAIM, SET GET', instead: 'unset WEBHOOK_SECRET', unlessDown: true }] : [])
  ]
  for (const requirement of required) {
    await requireRedis(data, requirement).catch(async (err) => {
      await Promise.all(clients.map(closeRedis))
      throw err
    })
  }
  // The classic adapter leaves a failed publish unhandled; its publisher logs and swallows it instead.
  const sharded = config.redisAdapter === 'sharded'
  const adapter = sharded
    ? createShardedAdapter(publisher, subscriber, { channelPrefix: SHARDED_PREFIX })
    : createAdapter(publishingSafely(publisher, logger), subscriber, { key: 'tandem', requestsTimeout: 2000 })
  const feed = new RedisDocFeed({ publisher, subscriber, sharded, oneChannel: !data.isCluster, logger })
  const guard = new RedisGuard(data, { health })
  const processName = `${config.nodeName}/${process.pid}/${randomUUID().slice(0, 8)}`
  const docStore = new RedisDocStore(data, { guard, waitAof: config.redisWaitAof, feed, appendSpacingMs: config.redisAppendSpacingMs })
  return {
    storage: 'redis',
    broadcast: `redis-${config.redisAdapter}`,
    docStore,
    historyStore: docStore.history,
    sessionStore: new RedisSessionStore(data),
    seats: new RedisSeats(data, { guard, process: processName, leaseMs: config.seatLeaseMs, logger }),
    // A live process answers a delivery within its timeout: one held twice as long is a dead process's.
    outbox: new RedisOutbox(sending ?? data, { consumer: processName, max: config.webhookOutboxMax, claimAfterMs: 2 * config.webhookTimeoutMs + 1000 }),
    adapter,
    limitStore: data,
    feed,
    adapterReady: () => isReady(publisher) && isReady(subscriber),
    isReady: () => clients.every(isReady),
    close: async () => {
      guard.close()
      for (const client of clients) await closeRedis(client)
    }
  }
}

/**
 * Refuses to start on a Redis older than what a setting uses.
 * @param {import('./redis.js').RedisClient} client
 * @param {{ version: number, what: string, uses: string, instead: string, unlessDown?: boolean }} requirement
 *   `version`: major × 100 + minor; `unlessDown`: a Redis that does not answer passes
 */
async function requireRedis (client, { version: needed, what, uses, instead, unlessDown = false }) {
  if (unlessDown && !isReady(client)) return
  const info = await client.info('server')
  const version = /redis_version:(\d+)\.(\d+)/.exec(info)
  if (!version || Number(version[1]) * 100 + Number(version[2]) < needed) {
    const neededName = `${Math.floor(needed / 100)}.${needed % 100}`
    throw new StartError('REDIS_UNSUPPORTED', `${what} needs Redis ${neededName} or later (${uses}); this Redis is ${version ? `${version[1]}.${version[2]}` : 'of an unknown version'}: upgrade it, or ${instead}`, { redis: redisWhere(client) })
  }
}

/** Where a client is connected, without credentials. @param {import('./redis.js').RedisClient} client */
function redisWhere (client) {
  const options = /** @type {{ options?: { host?: string, port?: number } }} */ (client).options ?? {}
  return options.host ? `${options.host}:${options.port}` : 'cluster'
}

/** @param {import('./redis.js').RedisClient} client @param {import('pino').Logger} logger */
function publishingSafely (client, logger) {
  return new Proxy(client, {
    get (target, property) {
      if (property === 'publish') {
        return (/** @type {[string, string | Buffer]} */ ...args) => target.publish(...args).catch((/** @type {Error} */ err) => {
          logger.debug({ err: err.message }, 'broadcast publish failed')
        })
      }
      const value = Reflect.get(target, property)
      return typeof value === 'function' ? value.bind(target) : value
    }
  })
}
