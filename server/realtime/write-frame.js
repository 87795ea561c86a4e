// Writes a packet, framed once for all its editors, to one editor: straight to ws's `sendFrame` when
// neither Engine.IO nor the WebSocket holds unsent bytes (docs/PERFORMANCE.md, "Frames written to the
// WebSocket directly"), else through Engine.IO, which keeps the order of what it holds and whose
// buffer slow-consumers.js measures. The direct path relies on internals (DIRECT_WRITE_ASSUMPTIONS),
// checked on the first WebSocket; if one fails, every frame goes through Engine.IO's public `write`.

/** ws's readyState of an open WebSocket. */
const WS_OPEN = 1
/** FIN and the binary opcode: a whole binary message in one frame (RFC 6455 5.2). */
const FIN_BINARY = 0x82

/** @typedef {(socket: import('socket.io').Socket, frame: Buffer) => void} WriteFrame */

/**
 * What the direct path takes for granted of Engine.IO and ws, none of it public API, each with its check.
 * @type {ReadonlyArray<readonly [assumption: string, holds: (conn: any) => boolean]>}
 */
export const DIRECT_WRITE_ASSUMPTIONS = Object.freeze([
  ['engine.io Socket#writeBuffer is the array of packets it holds', conn => Array.isArray(conn.writeBuffer)],
  ['engine.io Socket#upgrading is a boolean', conn => typeof conn.upgrading === 'boolean'],
  ['engine.io Transport#writable is a boolean', conn => typeof conn.transport.writable === 'boolean'],
  ['engine.io\'s WebSocket transport#socket is a ws WebSocket, OPEN = 1', conn => conn.transport.socket.OPEN === WS_OPEN],
  ['ws WebSocket#bufferedAmount is a number', conn => typeof conn.transport.socket.bufferedAmount === 'number'],
  ['ws WebSocket#_sender.sendFrame is a function', conn => typeof conn.transport.socket._sender.sendFrame === 'function'],
  ['ws Sender#sendFrame([frame]) writes the frame as it is, at once', conn => writesAsIs(conn.transport.socket._sender)]
])

/** @param {any} conn an Engine.IO connection over WebSocket @returns {string | null} the first assumption it breaks */
export function directWriteProblem (conn) {
  for (const [assumption, holds] of DIRECT_WRITE_ASSUMPTIONS) {
    try {
      if (!holds(conn)) return assumption
    } catch {
      return assumption
    }
  }
  return null
}

/**
 * Whether `sendFrame([frame])` writes it unchanged in one synchronous write, tried on a Sender of
 * its own over a stand-in socket. @param {any} sender
 */
function writesAsIs (sender) {
  const frame = webSocketFrameOf(Uint8Array.of(1, 2, 3))
  /** @type {unknown[]} */
  const written = []
  const socket = { cork () {}, uncork () {}, write (/** @type {unknown} */ chunk) { written.push(chunk); return true } }
  new sender.constructor(socket).sendFrame([frame])
  return written.length === 1 && Buffer.isBuffer(written[0]) && frame.equals(written[0])
}

/** One unmasked binary WebSocket frame. @param {Uint8Array} packet encoded by the server's parser @returns {Buffer} */
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
 * Direct while the assumptions hold.
 * @param {import('pino').Logger} logger told, once, of the assumption that failed
 * @returns {WriteFrame}
 */
export function frameWriter (logger) {
  /** @type {boolean | undefined} undefined until the first frame over WebSocket */
  let direct
  return function writeFrame (socket, frame) {
    const conn = /** @type {any} */ (socket.conn)
    const transport = conn.transport
    if (transport.name === 'websocket' && (direct ??= assumptionsHold(conn, logger)) && transport.writable &&
        conn.writeBuffer.length === 0 && !conn.upgrading && conn.readyState === 'open') {
      const webSocket = transport.socket
      if (webSocket.readyState === WS_OPEN && webSocket.bufferedAmount === 0) {
        webSocket._sender.sendFrame([frame])
        return
      }
    }
    conn.write(packetOf(frame))
  }
}

/** @param {any} conn over WebSocket @param {import('pino').Logger} logger */
function assumptionsHold (conn, logger) {
  const assumption = directWriteProblem(conn)
  if (assumption === null) return true
  logger.warn({ assumption }, 'writing every frame through Engine.IO: the direct path relies on internals of engine.io and ws that this version does not have (test/write-frame.test.js)')
  return false
}
