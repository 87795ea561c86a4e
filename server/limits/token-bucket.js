import { AppError } from '../errors.js'

/** One default clock for every bucket: a closure per bucket costs each connection memory. */
const performanceNow = () => performance.now()

/**
 * A connection's rate: a burst of a second's worth passes, a flood is held to the rate. Synchronous:
 * an await before applying would let a connection's later update overtake an earlier one.
 */
export class TokenBucket {
  /** @param {string} name shown in refusals @param {number} perSecond 0 = no limit @param {() => number} [now] in ms */
  constructor (name, perSecond, now = performanceNow) {
    this.name = name
    this.perSecond = perSecond
    this.now = now
    this.tokens = perSecond
    this.refilledAt = now()
  }

  /** Throws RATE_LIMITED with how long until the tokens are there. @param {number} [cost] */
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
