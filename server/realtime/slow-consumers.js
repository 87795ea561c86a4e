/** How often every connection's send queue is measured, in ms. */
const CHECK_INTERVAL_MS = 500

/**
 * Drops connections that stop reading. Socket.IO queues what it cannot write yet (the engine's
 * write buffer, and the WebSocket's own), and a client that never reads would grow that queue by
 * every broadcast of its rooms. Twice a second each connection's queue is measured; past
 * `maxBufferedBytes` the connection is closed and its queue released. Other editors never wait for
 * it: broadcasts only enqueue.
 * @param {import('socket.io').Server} io
 * @param {object} deps
 * @param {number} deps.maxBufferedBytes
 * @param {import('../metrics.js').Metrics} deps.metrics
 * @param {import('../audit.js').Audit} deps.audit
 * @returns {() => void} stops watching
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
 * Drops a connection for which the server holds more than `maxBufferedBytes`, counting `unsentBytes`
 * about to be queued: what Engine.IO holds, and what its WebSocket holds that the kernel has not
 * taken yet. Called by the timer, and before a reply as large as a document is built.
 * @param {any} conn an Engine.IO connection
 * @param {number} unsentBytes
 * @param {{ maxBufferedBytes: number, metrics: import('../metrics.js').Metrics, audit: import('../audit.js').Audit }} deps
 * @returns {boolean} whether it was dropped
 */
export function dropIfSlow (conn, unsentBytes, { maxBufferedBytes, metrics, audit }) {
  const buffered = queuedBytes(conn.writeBuffer) + (conn.transport?.socket?.bufferedAmount ?? 0) + unsentBytes
  if (buffered <= maxBufferedBytes) return false
  audit.refused('socket.slow-consumer', { ip: conn.remoteAddress, engine: conn.id, bufferedBytes: buffered })
  metrics.slowConsumers.inc()
  // A WebSocket is destroyed outright: a polite close would queue its close frame behind the
  // data the client is not reading, and hold both for the close timeout (30 s).
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
