import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'
import { AppError } from '../errors.js'

/**
 * `points` per `seconds` per key (0 = off). With Redis the count is shared by every process; an
 * in-memory count stands in during an outage, so it neither blocks nor unlimits clients.
 */
export class RateLimit {
  /**
   * @param {object} options
   * @param {string} options.name shown in refusals (`updates per second`)
   * @param {number} options.points @param {number} options.seconds
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

  /** Throws RATE_LIMITED with how long to wait. @param {string} key @param {number} [cost] */
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
