import { AppError, errorBody } from '../errors.js'

const OK = Object.freeze({ ok: /** @type {const} */ (true) })

/**
 * The one ACK discipline for socket events: the event must carry an ACK callback; the handler's
 * result is sent as `{ ok: true, ...result }` (a handler with nothing to add returns nothing, and the
 * shared OK goes out: no object per update) and any error as `{ ok: false, error: { code, message } }`,
 * exactly once. Unexpected errors are logged and reach the client only as INTERNAL.
 *
 * With `optional`, an event without a callback is handled all the same and its refusals counted:
 * for fire-and-forget events (cursor moves, superseded by the next one), answered only when asked.
 * @param {string} event
 * @param {(payload: any) => Promise<object | void> | object | void} handler
 * @param {object} deps
 * @param {import('../metrics.js').Metrics} deps.metrics
 * @param {import('pino').Logger} deps.logger
 * @param {(event: string, error: import('../../isomorphic/error-codes.js').ErrorBody) => void} [deps.onRefused] told of every refusal
 * @param {{ optional?: boolean }} [options]
 * @returns {(...args: any[]) => Promise<void>}
 */
export function withAck (event, handler, { metrics, logger, onRefused }, { optional = false } = {}) {
  return async (...args) => {
    const last = args[args.length - 1]
    const ack = typeof last === 'function' ? last : null
    if (!ack && !optional) {
      metrics.refusals.inc({ code: 'BAD_REQUEST', event })
      logger.debug({ event }, 'event without an ACK callback ignored')
      return
    }
    const payload = ack && args.length === 1 ? undefined : args[0]
    let reply
    try {
      const result = await handler(payload)
      reply = result ? { ok: true, ...result } : OK
    } catch (err) {
      if (!(err instanceof AppError)) logger.error({ err, event }, 'event handler failed')
      reply = refusal(event, err, metrics)
      onRefused?.(event, reply.error)
    }
    ack?.(reply)
  }
}

/**
 * @param {string} event
 * @param {unknown} err
 * @param {import('../metrics.js').Metrics} metrics
 */
export function refusal (event, err, metrics) {
  const error = errorBody(err)
  metrics.refusals.inc({ code: error.code, event })
  return { ok: /** @type {const} */ (false), error }
}
