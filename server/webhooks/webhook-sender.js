import { EVENT_ID_HEADER, EVENT_TYPE_HEADER, SIGNATURE_HEADER, signatureOf } from './signature.js'
/** @import { Outbox, TakenDelivery } from '../storage/outbox.js' */

// Sends what the outbox holds, beside the editing: at most `concurrency` requests at once, each
// bounded by `timeoutMs`, so a receiver that hangs costs its timeout and a slot, never an edit.
// A delivery leaves the outbox once answered 2xx or after its last attempt; shutdown aborts what is
// in flight and leaves it there.

/** How often the outbox is read without being told: deliveries other processes stored, retries come due, takeovers. */
const POLL_MS = 1000
const TIMED_OUT = 'timeout'
const CLOSING = 'closing'

/** @typedef {{ ok: true } | { ok: false, reason: import('./webhook-metrics.js').FAILURE_REASONS[number], status?: number } | { closing: true }} Outcome */

/**
 * The longest wait before the retry after `attempts` failed ones is `backoffMs` doubled per attempt,
 * capped; the wait is drawn uniformly below it ("full jitter"), so receivers coming back are not hit
 * by every sender at once.
 * @param {number} attempts made so far (1 or more) @param {{ backoffMs: number, maxBackoffMs: number }} options
 * @param {() => number} random in [0, 1)
 */
export function backoffMs (attempts, { backoffMs, maxBackoffMs }, random = Math.random) {
  return Math.floor(random() * Math.min(maxBackoffMs, backoffMs * 2 ** Math.min(attempts - 1, 40)))
}

export class WebhookSender {
  /** @type {'running' | 'closed'} */
  #state = 'running'
  /** @type {Map<string, { controller: AbortController, done: Promise<void> }>} deliveries in flight, by key */
  #sending = new Map()
  /** @type {Promise<void> | null} */
  #pumping = null
  #pumpAgain = false
  /** @type {NodeJS.Timeout | undefined} */
  #timer
  #timerAt = Infinity
  #readError = ''

  /**
   * @param {object} options @param {Outbox} options.outbox @param {string} options.secret
   * @param {number} options.timeoutMs @param {number} options.maxAttempts @param {number} options.backoffMs
   * @param {number} options.maxBackoffMs @param {number} options.concurrency
   * @param {import('./webhook-metrics.js').WebhookMetrics} options.metrics @param {import('pino').Logger} options.logger
   */
  constructor ({ outbox, secret, timeoutMs, maxAttempts, backoffMs, maxBackoffMs, concurrency, metrics, logger }) {
    this.outbox = outbox
    this.secret = secret
    this.timeoutMs = timeoutMs
    this.maxAttempts = maxAttempts
    this.backoff = { backoffMs, maxBackoffMs }
    this.concurrency = concurrency
    this.metrics = metrics
    this.logger = logger
  }

  /** Reads the outbox now: at start (what a previous run left), and after this process adds to it. */
  wake () {
    this.#wakeAt(Date.now())
  }

  /** Aborts what is in flight, leaving it in the outbox. Idempotent. */
  async close () {
    this.#state = 'closed'
    clearTimeout(this.#timer)
    for (const { controller } of this.#sending.values()) controller.abort(CLOSING)
    await this.#pumping
    await Promise.all([...this.#sending.values()].map(({ done }) => done))
  }

  /** @param {number} at ms since 1970 */
  #wakeAt (at) {
    if (this.#state !== 'running' || at >= this.#timerAt) return
    clearTimeout(this.#timer)
    this.#timerAt = at
    this.#timer = setTimeout(() => {
      this.#timerAt = Infinity
      this.#pump()
    }, Math.max(0, at - Date.now())).unref()
  }

  #pump () {
    if (this.#pumping) {
      this.#pumpAgain = true
      return
    }
    this.#pumping = this.#takeWhileFree()
      .then(() => { this.#readError = '' }, (err) => {
        // One line per outage, not one per poll: storage health reports the outage itself.
        if (err.message !== this.#readError) this.logger.warn({ err: err.message }, 'reading the webhook outbox failed')
        this.#readError = err.message
      })
      .finally(() => {
        this.#pumping = null
        this.#wakeAt(Date.now() + (this.#pumpAgain ? 0 : POLL_MS))
      })
  }

  async #takeWhileFree () {
    let free
    do {
      this.#pumpAgain = false
      free = this.concurrency - this.#sending.size
      if (free <= 0 || this.#state !== 'running') return
      const taken = await this.outbox.take(free)
      for (const delivery of taken) {
        if (this.#state === 'running') this.#send(delivery)
        else await this.outbox.release(delivery)
      }
      if (taken.length < free) return
    } while (this.#state === 'running')
  }

  /** @param {TakenDelivery} taken */
  #send (taken) {
    const controller = new AbortController()
    const done = this.#attempt(taken, controller)
      .then(outcome => this.#settle(taken, outcome))
      .then(() => true, async (err) => {
        this.logger.warn({ err: err.message, event: taken.event }, 'recording a webhook attempt failed; it will be sent again')
        await this.outbox.release(taken).catch(() => {})
        return false
      })
      .then((recorded) => {
        this.#sending.delete(taken.key)
        // A store that cannot record answers is read again at the next poll, not at once: the
        // receiver would get the same delivery as fast as it answers.
        if (recorded) this.wake()
      })
    this.#sending.set(taken.key, { controller, done })
  }

  /** @param {TakenDelivery} taken @param {AbortController} controller @returns {Promise<Outcome>} */
  async #attempt ({ url, body, event, type }, controller) {
    const timer = setTimeout(() => controller.abort(TIMED_OUT), this.timeoutMs)
    try {
      const res = await fetch(url, {
        method: 'POST',
        body,
        redirect: 'manual',
        signal: controller.signal,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Tandem-Webhooks',
          [SIGNATURE_HEADER]: signatureOf(this.secret, body, Math.floor(Date.now() / 1000)),
          [EVENT_ID_HEADER]: event,
          [EVENT_TYPE_HEADER]: type
        }
      })
      await res.body?.cancel()
      return res.ok ? { ok: true } : { ok: false, reason: 'status', status: res.status }
    } catch {
      if (controller.signal.reason === CLOSING) return { closing: true }
      return { ok: false, reason: controller.signal.reason === TIMED_OUT ? 'timeout' : 'network' }
    } finally {
      clearTimeout(timer)
    }
  }

  /** @param {TakenDelivery} taken @param {Outcome} outcome */
  async #settle (taken, outcome) {
    if ('closing' in outcome) return this.outbox.release(taken)
    if (outcome.ok) {
      await this.outbox.remove(taken)
      this.metrics.ended('delivered')
      return
    }
    this.metrics.failed(outcome.reason)
    const attempts = taken.attempts + 1
    const where = { event: taken.event, type: taken.type, to: originOf(taken.url), attempts, reason: outcome.reason, status: outcome.status }
    if (attempts >= this.maxAttempts) {
      await this.outbox.remove(taken)
      this.metrics.ended('gave_up')
      this.logger.error(where, 'webhook dropped after its last attempt')
      return
    }
    const dueAt = Date.now() + backoffMs(attempts, this.backoff)
    await this.outbox.retry(taken, dueAt)
    this.logger.debug(where, 'webhook attempt failed; retrying')
    this.#wakeAt(dueAt)
  }
}

/** Where a delivery goes, without the path or query that may hold a receiver's token. @param {string} url */
function originOf (url) {
  return new URL(url).origin
}
