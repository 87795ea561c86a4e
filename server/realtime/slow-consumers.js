/** @import { Audit } from '../audit.js' */
/** @import { Metrics } from '../metrics.js' */

const CHECK_INTERVAL_MS = 500

/**
 * Drops connections that stop reading: Socket.IO queues what it cannot write, and a client that never
 * reads would grow that queue by every broadcast. Other editors never wait for it; returns what stops it.
 * @param {import('socket.io').Server} io @param {object} deps @param {number} deps.maxBufferedBytes
 * @param {Metrics} deps.metrics @param {Audit} deps.audit
 */
export function dropSlowConsumers (io, { maxBufferedBytes, metrics, audit }) {
  const timer = setInterval(() => {
    // The engine's connections and their queues are not in its public types.
    const clients = /** @type {Record<string, any>} */ (/** @type {any} */ (io.engine).clients)
    for (const conn of Object.values(clients)) dropIfSlow(conn, 0, { maxBufferedBytes, metrics, audit })
  }, CHECK_INTERVAL_MS)
  timer.unref()
  return () => clearInterval(timer)
}

/**
 * Past `maxBufferedBytes` held in Engine.IO and in its WebSocket, counting `unsentBytes` about to be
 * queued (a join reply as large as a document); says whether it dropped it.
 * @param {any} conn an Engine.IO connection @param {number} unsentBytes
 * @param {{ maxBufferedBytes: number, metrics: Metrics, audit: Audit }} deps
 */
export function dropIfSlow (conn, unsentBytes, { maxBufferedBytes, metrics, audit }) {
  const buffered = queuedBytes(conn.writeBuffer) + (conn.transport?.socket?.bufferedAmount ?? 0) + unsentBytes
  if (buffered <= maxBufferedBytes) return false
  audit.refused('socket.slow-consumer', { ip: conn.remoteAddress, engine: conn.id, bufferedBytes: buffered })
  metrics.slowConsumers.inc()
  // Destroyed outright: a close frame would queue behind the unread data until the close timeout.
  const ws = conn.transport?.socket
  if (typeof ws?.terminate === 'function') ws.terminate()
  else conn.close(true)
  return true
}

/** @param {{ data?: unknown }[]} packets */
function queuedBytes (packets) {
  let bytes = 0
  for (const { data } of packets) {
    if (typeof data === 'string') bytes += data.length
    else if (data instanceof Uint8Array || data instanceof ArrayBuffer) bytes += data.byteLength
  }
  return bytes
}
