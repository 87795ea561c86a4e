import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'
import { AppError } from '../errors.js'

/**
 * One rate limit: `points` per `seconds` per key (a client IP, a socket id), counted by
 * rate-limiter-flexible. With a Redis client the count is shared by every process (an in-memory
 * count stands in while Redis is down, so an outage neither blocks nor unlimits clients).
 * `points` 0 turns the limit off.
 */
export class RateLimit {
  /**
   * @param {object} options
   * @param {string} options.name shown in refusals (`updates per second`)
   * @param {number} options.points
   * @param {number} options.seconds
   * @param {import('../storage/redis.js').RedisClient} [options.redis]
   */
  constructor ({ name, points, seconds, redis }) {
    this.name = name
    this.points = points
    const settings = { points, duration: seconds }
    this.limiter = points === 0
      ? null
      : redis
        ? new RateLimiterRedis({
          ...settings,
          storeClient: redis,
          keyPrefix: `tandem:limit:${name.replaceAll(' ', '-')}`,
          insuranceLimiter: new RateLimiterMemory(settings)
        })
        : new RateLimiterMemory(settings)
  }

  /**
   * Takes `cost` points for `key`, or throws RATE_LIMITED with how long to wait.
   * @param {string} key
   * @param {number} [cost]
   */
  async take (key, cost = 1) {
    if (!this.limiter) return
    try {
      await this.limiter.consume(key, cost)
    } catch (res) {
      if (!(res instanceof RateLimiterRes)) throw res
      throw new AppError('RATE_LIMITED', `limit of ${this.points} ${this.name} reached; retry later`, {
        limit: this.name,
        retryAfterMs: Math.max(1, Math.ceil(res.msBeforeNext))
      })
    }
  }
}
