import { RateLimit } from './rate-limit.js'
import { TokenBucket } from './token-bucket.js'

/**
 * Per-IP rate limits (docs/SECURITY.md), counted in Redis when there is one.
 * @param {import('../config.js').Config} config @param {import('../storage/redis.js').RedisClient} [redis]
 */
export function createLimits (config, redis) {
  return {
    rest: new RateLimit({ name: 'REST requests per minute', points: config.restPerMinute, seconds: 60, redis }),
    connections: new RateLimit({ name: 'connections per minute', points: config.connectionsPerMinute, seconds: 60, redis }),
    joins: new RateLimit({ name: 'joins per minute', points: config.joinsPerMinute, seconds: 60, redis })
  }
}

/** @param {import('../config.js').Config} config @param {() => number} [now] the buckets' clock, in ms */
export function connectionLimits (config, now) {
  return {
    updates: new TokenBucket('updates per second', config.updatesPerSecond, now),
    awareness: new TokenBucket('awareness messages per second', config.awarenessPerSecond, now),
    bytes: new TokenBucket('bytes per second', config.bytesPerSecond, now)
  }
}

/** @typedef {ReturnType<typeof createLimits>} Limits */
