import { io } from 'socket.io-client'
import { now } from '../../../loadtest/clock.js'
import { RELAY_EVENTS } from '../servers/relay-events.js'

// The client of the naive Socket.IO relay (servers/socketio-relay.js): a socket.io-client WebSocket
// per editor, `room:join` acknowledged, then each Yjs update emitted as a binary `room:update`
// that the server relays to the room's other sockets. No sync (editors start from the same seed),
// no ACK of updates, no presence.

/** @type {import('../../../loadtest/protocols/index.js').Protocol} */
export const protocol = {
  name: 'socketio-relay',
  ack: null,
  connect: options => new SocketIoRelayConnection(options)
}

class SocketIoRelayConnection {
  /** @type {import('socket.io-client').Socket | null} */
  socket = null
  closing = false
  sendAwareness = null

  /** @param {import('../../../loadtest/protocols/index.js').ConnectOptions} options */
  constructor (options) {
    this.options = options
  }

  async open () {
    const { url, timeoutMs, on } = this.options
    const socket = io(url, { transports: ['websocket'], reconnection: false, forceNew: true, timeout: timeoutMs })
    this.socket = socket
    socket.on(RELAY_EVENTS.UPDATE, (update) => on.update(new Uint8Array(update)))
    await new Promise((resolve, reject) => {
      socket.once('connect', () => resolve(undefined))
      socket.once('connect_error', reject)
    })
    socket.on('disconnect', () => { if (!this.closing) on.lost('disconnected') })
  }

  async join () {
    const socket = /** @type {import('socket.io-client').Socket} */ (this.socket)
    await socket.timeout(this.options.timeoutMs).emitWithAck(RELAY_EVENTS.JOIN, this.options.room)
    return { appliedAt: now() }
  }

  /** @param {Uint8Array} update */
  send (update) {
    this.socket?.emit(RELAY_EVENTS.UPDATE, update)
    return null
  }

  close () {
    this.closing = true
    this.socket?.disconnect()
  }
}
