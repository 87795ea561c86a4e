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
//
// A packet is framed for WebSocket once, however many editors it goes to (`webSocketFrameOf`): the
// frame, header and packet in one buffer, is handed to ws's `sendFrame` as Engine.IO hands its
// pre-encoded broadcasts, one write per editor, where ws's `send` framed it again for each editor,
// with a header of its own, written with the packet in two.

/** ws's readyState of an open WebSocket. */
const WS_OPEN = 1
/** FIN and the binary opcode: a whole binary message in one frame (RFC 6455 5.2). */
const FIN_BINARY = 0x82

/**
 * A packet's bytes as one unmasked binary WebSocket frame.
 * @param {Uint8Array} packet one packet, encoded by the server's parser
 * @returns {Buffer}
 */
export function webSocketFrameOf (packet) {
  const length = packet.byteLength
  const headerLength = length < 126 ? 2 : length < 0x10000 ? 4 : 10
  const frame = Buffer.allocUnsafe(headerLength + length)
  frame[0] = FIN_BINARY
  if (headerLength === 2) {
    frame[1] = length
  } else if (headerLength === 4) {
    frame[1] = 126
    frame.writeUInt16BE(length, 2)
  } else {
    frame[1] = 127
    frame.writeUInt32BE(0, 2)
    frame.writeUInt32BE(length, 6)
  }
  frame.set(packet, headerLength)
  return frame
}

/** The packet a frame of `webSocketFrameOf` carries. @param {Buffer} frame */
function packetOf (frame) {
  const length7 = frame[1] & 0x7f
  return frame.subarray(length7 < 126 ? 2 : length7 === 126 ? 4 : 10)
}

/**
 * @param {import('socket.io').Socket} socket
 * @param {Buffer} frame from `webSocketFrameOf`
 */
export function writeFrame (socket, frame) {
  const conn = /** @type {any} */ (socket.conn)
  const transport = conn.transport
  if (transport.name === 'websocket' && transport.writable && conn.writeBuffer.length === 0 && !conn.upgrading &&
      conn.readyState === 'open') {
    const webSocket = transport.socket
    if (webSocket.readyState === WS_OPEN && webSocket.bufferedAmount === 0) {
      webSocket._sender.sendFrame([frame])
      return
    }
  }
  conn.write(packetOf(frame))
}
