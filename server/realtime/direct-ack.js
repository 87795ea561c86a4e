import { PacketTemplate } from '../../isomorphic/parser.js'
import { OK } from './with-ack.js'
import { webSocketFrameOf } from './write-frame.js'

// Most ACKs are the shared `{ ok: true }` of an accepted update: written like a relayed update
// (write-frame.js, keeping a socket's frames in order) from a template encoding only the packet id,
// via Socket.IO's `ack(id)`, which alone knows the id. Other answers go through Socket.IO.

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

/** @param {import('socket.io').Socket} socket @param {import('./write-frame.js').WriteFrame} writeFrame */
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
