import * as Y from 'yjs'
import { createSocket } from '../../client/src/socket.js'
import { EVENTS } from '../../isomorphic/events.js'
import { now } from '../clock.js'

// Tandem's protocol (docs/PROTOCOL.md) over a real socket.io-client WebSocket: `doc:join` returns the
// server's state, the client answers with its diff (acknowledged), and every `doc:update` awaits an
// ACK that the server sends once the update is stored.

const REMOTE = 'remote'

/** @type {import('./index.js').Protocol} */
export const protocol = {
  name: 'tandem',
  ack: 'stored',
  connect: options => new TandemConnection(options)
}

class TandemConnection {
  /** @type {import('socket.io-client').Socket | null} */
  socket = null
  closing = false

  /** @param {import('./index.js').ConnectOptions} options */
  constructor (options) {
    this.options = options
  }

  async open () {
    const { url, token, timeoutMs, on } = this.options
    // The shipped client's socket: the same transport and parser as an editor page.
    const socket = createSocket(url, { token: token || undefined, reconnection: false, timeout: timeoutMs })
    this.socket = socket
    socket.on(EVENTS.UPDATE, ({ update }) => on.update(new Uint8Array(update)))
    socket.on(EVENTS.AWARENESS, ({ update }) => on.awareness(new Uint8Array(update)))
    socket.on(EVENTS.CLOSED, () => on.lost('closed'))
    await new Promise((resolve, reject) => {
      socket.once('connect', () => resolve(undefined))
      socket.once('connect_error', reject)
    })
    socket.on('disconnect', () => { if (!this.closing) on.lost('disconnected') })
  }

  /** @param {Y.Doc} ydoc */
  async join (ydoc) {
    const { room: doc, on } = this.options
    const reply = await this.#request(EVENTS.JOIN, { doc, sv: Y.encodeStateVector(ydoc) })
    if (!reply.ok) throw new Error(`join refused: ${reply.error.code}`)
    Y.applyUpdate(ydoc, new Uint8Array(reply.update), REMOTE)
    on.awareness(new Uint8Array(reply.awareness))
    const appliedAt = now()
    const diff = await this.#request(EVENTS.UPDATE, { doc, update: Y.encodeStateAsUpdate(ydoc, new Uint8Array(reply.sv)) })
    if (!diff.ok) throw new Error(`sync refused: ${diff.error.code}`)
    return { appliedAt }
  }

  /** @param {Uint8Array} update */
  send (update) {
    return this.#request(EVENTS.UPDATE, { doc: this.options.room, update }).then(
      reply => reply.ok ? { ok: /** @type {const} */ (true) } : { ok: /** @type {const} */ (false), code: reply.error.code })
  }

  /** @param {Uint8Array} update */
  sendAwareness = (update) => {
    this.socket?.emit(EVENTS.AWARENESS, { doc: this.options.room, update })
  }

  close () {
    this.closing = true
    this.socket?.disconnect()
  }

  /**
   * @param {string} event
   * @param {unknown} payload
   */
  #request (event, payload) {
    const socket = /** @type {import('socket.io-client').Socket} */ (this.socket)
    return socket.timeout(this.options.timeoutMs).emitWithAck(event, payload)
  }
}
