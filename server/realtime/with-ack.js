import { AppError, errorBody } from '../errors.js'

export const OK = Object.freeze({ ok: /** @type {const} */ (true) })

/**
 * @typedef {object} AckedConnection what an event's handler is given of the socket it came on
 * @property {import('pino').Logger} logger
 * @property {(event: string, error: import('../../isomorphic/error-codes.js').ErrorBody) => void} refused told of every refusal
 */

/**
 * The one ACK discipline: the event must carry a callback, answered exactly once with
 * `{ ok: true, ...result }` (the shared OK when there is nothing to add) or `{ ok: false, error }`;
 * unexpected errors reach the client only as INTERNAL. One listener for every socket (called with
 * it as `this`). `optional`: fire-and-forget events (cursor moves) need no callback.
 * @template {AckedConnection} C @param {string} event
 * @param {(connection: C, payload: any) => Promise<object | void> | object | void} handler
 * @param {object} deps @param {import('../metrics.js').Metrics} deps.metrics
 * @param {(socket: import('socket.io').Socket) => C} deps.connectionOf @param {{ optional?: boolean }} [options]
 * @returns {(this: import('socket.io').Socket, ...args: any[]) => Promise<void>}
 */
export function withAck (event, handler, { metrics, connectionOf }, { optional = false } = {}) {
  return async function (...args) {
    const connection = connectionOf(this)
    const last = args[args.length - 1]
    const ack = typeof last === 'function' ? last : null
    if (!ack && !optional) {
      metrics.refusals.inc({ code: 'BAD_REQUEST', event })
      connection.logger.debug({ event }, 'event without an ACK callback ignored')
      return
    }
    const payload = ack && args.length === 1 ? undefined : args[0]
    let reply
    try {
      const result = await handler(connection, payload)
      reply = result ? { ok: true, ...result } : OK
    } catch (err) {
      if (!(err instanceof AppError)) connection.logger.error({ err, event }, 'event handler failed')
      reply = refusal(event, err, metrics)
      connection.refused(event, reply.error)
    }
    ack?.(reply)
  }
}

/** @param {string} event @param {unknown} err @param {import('../metrics.js').Metrics} metrics */
export function refusal (event, err, metrics) {
  const error = errorBody(err)
  metrics.refusals.inc({ code: error.code, event })
  return { ok: /** @type {const} */ (false), error }
}
