import { PacketTemplate } from '../../isomorphic/parser.js'
import { OK } from './with-ack.js'
import { webSocketFrameOf } from './write-frame.js'

// Most ACKs the server sends are the shared `{ ok: true }` of an accepted update. Socket.IO sends
// each through its own path: the ACK packet, then Engine.IO's packet object, its events, the write
// buffer and its flush, and a WebSocket send whose completion Engine.IO waits for before it writes
// directly again. Here such an ACK is written like a relayed update (write-frame.js), which keeps a
// socket's frames in order, from a template of the server's parser that encodes only its packet
// id. Every other answer (a refusal, a join's document) goes through Socket.IO as before.
// Socket.IO makes a packet's ACK function in its `ack(id)` method, the one place that knows the
// packet's id, so that is where this takes over.

/** Socket.IO's ACK packet type (socket.io-protocol v5). */
const ACK = 3

/** @type {Map<string, PacketTemplate>} the OK ACK of each namespace, its packet id last */
const okPackets = new Map()

/** @param {string} nsp */
function okPacketOf (nsp) {
  let packet = okPackets.get(nsp)
  if (!packet) {
    packet = new PacketTemplate({ type: ACK, nsp, data: [OK], id: null })
    okPackets.set(nsp, packet)
  }
  return packet
}

/**
 * Makes the ACK functions Socket.IO gives this socket's event handlers write `OK` directly.
 * @param {import('socket.io').Socket} socket
 * @param {import('./write-frame.js').WriteFrame} writeFrame
 */
export function answerOkDirectly (socket, writeFrame) {
  const internals = /** @type {{ ack?: (id: number) => (...args: unknown[]) => void }} */ (/** @type {unknown} */ (socket))
  const viaSocketIo = internals.ack
  if (typeof viaSocketIo !== 'function') return
  const okPacket = okPacketOf(socket.nsp.name)
  internals.ack = (id) => (reply) => {
    if (reply !== OK) return viaSocketIo.call(socket, id)(reply)
    // As Socket.IO does: nothing is written to a connection that is closing.
    if (socket.conn.readyState !== 'open') return
    writeFrame(socket, webSocketFrameOf(okPacket.encode(id)))
  }
}
