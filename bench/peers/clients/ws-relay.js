import { now } from '../../../loadtest/clock.js'
import { openWebSocket } from '../../../loadtest/protocols/websocket.js'

// The client of the bare ws relay (servers/ws-relay.js): one WebSocket per editor, the room in the
// URL path, each Yjs update sent as one binary message and received as the bytes another editor
// sent. No sync (editors start from the same seed), no ACK, no presence.

/** @type {import('../../../loadtest/protocols/index.js').Protocol} */
export const protocol = {
  name: 'ws-relay',
  ack: null,
  connect: options => new WsRelayConnection(options)
}

class WsRelayConnection {
  /** @type {import('ws').WebSocket | null} */
  ws = null
  closing = false
  sendAwareness = null

  /** @param {import('../../../loadtest/protocols/index.js').ConnectOptions} options */
  constructor (options) {
    this.options = options
  }

  async open () {
    const { url, room, timeoutMs, on } = this.options
    this.ws = await openWebSocket(`${url}/${encodeURIComponent(room)}`, timeoutMs, {
      message: data => on.update(data),
      close: () => { if (!this.closing) on.lost('disconnected') }
    })
  }

  /** The server adds a socket to its room as it connects. */
  async join () {
    return { appliedAt: now() }
  }

  /** @param {Uint8Array} update */
  send (update) {
    this.ws?.send(update)
    return null
  }

  close () {
    this.closing = true
    this.ws?.close()
  }
}
