// Writes an encoded packet to one editor. Over WebSocket, with nothing waiting in Engine.IO, the
// frame goes to the WebSocket at once, past Engine.IO's own path (a packet object, its events, the
// write buffer and its flush): 6.5 % less CPU per delivery at 600 editors in rooms of 5, the median
// of five sets of runs (docs/PERFORMANCE.md). Anything else goes through Engine.IO, which keeps the
// order of what it holds: long-polling, an upgrade under way, packets waiting for a send in
// progress to finish. What Engine.IO holds for a socket is always written before the next frame
// that comes here, so a socket's frames keep their order. Nor does a frame go directly while the
// WebSocket still holds bytes the kernel has not taken (a client that stopped reading): Engine.IO
// then queues what follows in its write buffer, where slow-consumers.js finds it, rather than the
// socket's own buffer growing without bound.

const WS_BINARY = Object.freeze({ binary: true, compress: false })

/**
 * @param {import('socket.io').Socket} socket
 * @param {Uint8Array} frame one packet, encoded by the server's parser
 */
export function writeFrame (socket, frame) {
  const conn = /** @type {any} */ (socket.conn)
  const transport = conn.transport
  if (transport.name === 'websocket' && transport.writable && conn.writeBuffer.length === 0 && !conn.upgrading &&
      conn.readyState === 'open' && transport.socket.bufferedAmount === 0) {
    transport.socket.send(frame, WS_BINARY)
  } else {
    conn.write(frame)
  }
}
