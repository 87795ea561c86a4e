/** How often every connection's send queue is measured, in ms. */
const CHECK_INTERVAL_MS = 500

/**
 * Drops connections that stop reading. Socket.IO queues what it cannot write yet (the engine's
 * write buffer, and the WebSocket's own), and a client that never reads would grow that queue by
 * every broadcast of its rooms. Twice a second each connection's queue is measured; past `maxBufferedBytes` the connection
 * is closed and its queue released. Other editors never wait for it: broadcasts only enqueue.
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
    for (const conn of Object.values(clients)) {
      // What Engine.IO holds, and what its WebSocket holds that the kernel has not taken yet.
      const buffered = queuedBytes(conn.writeBuffer) + (conn.transport?.socket?.bufferedAmount ?? 0)
      if (buffered <= maxBufferedBytes) continue
      audit.refused('socket.slow-consumer', { ip: conn.remoteAddress, engine: conn.id, bufferedBytes: buffered })
      metrics.slowConsumers.inc()
      // A WebSocket is destroyed outright: a polite close would queue its close frame behind the
      // data the client is not reading, and hold both for the close timeout (30 s).
      const ws = conn.transport?.socket
      if (typeof ws?.terminate === 'function') ws.terminate()
      else conn.close(true)
    }
  }, CHECK_INTERVAL_MS)
  timer.unref()
  return () => clearInterval(timer)
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
