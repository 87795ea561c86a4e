import { AppError } from '../errors.js'

/** The default clock, one for every bucket (a closure per bucket costs each connection ~300 bytes). */
const performanceNow = () => performance.now()

/**
 * A per-connection rate: a bucket of `perSecond` tokens refilled continuously, so a burst up to one
 * second's worth passes and a flood is held to the rate. It is synchronous on purpose: it runs on
 * every update before the update is applied, and an await there would let a connection's later
 * update overtake an earlier one. A connection lives in one process, so there is nothing to share.
 */
export class TokenBucket {
  /**
   * @param {string} name shown in refusals (`updates per second`)
   * @param {number} perSecond 0 = no limit
   * @param {() => number} [now] the clock, in ms; tests pass one they move by hand
   */
  constructor (name, perSecond, now = performanceNow) {
    this.name = name
    this.perSecond = perSecond
    this.now = now
    this.tokens = perSecond
    this.refilledAt = now()
  }

  /**
   * Takes `cost` tokens or throws RATE_LIMITED with how long until they are there.
   * @param {number} [cost]
   */
  take (cost = 1) {
    if (this.perSecond === 0) return
    const now = this.now()
    this.tokens = Math.min(this.perSecond, this.tokens + (now - this.refilledAt) * this.perSecond / 1000)
    this.refilledAt = now
    if (this.tokens >= cost) {
      this.tokens -= cost
      return
    }
    throw new AppError('RATE_LIMITED', `limit of ${this.perSecond} ${this.name} reached; retry later`, {
      limit: this.name,
      retryAfterMs: Math.ceil((cost - this.tokens) * 1000 / this.perSecond)
    })
  }
}
