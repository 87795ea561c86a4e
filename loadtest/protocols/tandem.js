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
  join (ydoc) {
    return joinRoom(this.#request, this.options, ydoc)
  }

  /** @param {Uint8Array} update */
  send (update) {
    return sendUpdate(this.#request, this.options.room, update)
  }

  /** @param {Uint8Array} update */
  sendAwareness = (update) => {
    this.socket?.emit(EVENTS.AWARENESS, { doc: this.options.room, update })
  }

  close () {
    this.closing = true
    this.socket?.disconnect()
  }

  /** @type {Request} */
  #request = (event, payload) => {
    const socket = /** @type {import('socket.io-client').Socket} */ (this.socket)
    return socket.timeout(this.options.timeoutMs).emitWithAck(event, payload)
  }
}

/** @typedef {(event: string, payload: unknown) => Promise<any>} Request emits with an ACK; resolves with the reply */

/**
 * Joins a room over any transport of Tandem's protocol: `doc:join` returns the server's state, then
 * this client's diff goes back as an update, acknowledged.
 * @param {Request} request
 * @param {{ room: string, on: import('./index.js').ConnectionHandlers }} options
 * @param {Y.Doc} ydoc
 */
export async function joinRoom (request, { room: doc, on }, ydoc) {
  const reply = await request(EVENTS.JOIN, { doc, sv: Y.encodeStateVector(ydoc) })
  if (!reply.ok) throw new Error(`join refused: ${reply.error.code}`)
  Y.applyUpdate(ydoc, new Uint8Array(reply.update), REMOTE)
  on.awareness(new Uint8Array(reply.awareness))
  const appliedAt = now()
  const diff = await request(EVENTS.UPDATE, { doc, update: Y.encodeStateAsUpdate(ydoc, new Uint8Array(reply.sv)) })
  if (!diff.ok) throw new Error(`sync refused: ${diff.error.code}`)
  return { appliedAt }
}

/**
 * @param {Request} request
 * @param {string} doc
 * @param {Uint8Array} update
 * @returns {Promise<import('./index.js').Ack>}
 */
export function sendUpdate (request, doc, update) {
  return request(EVENTS.UPDATE, { doc, update }).then(
    reply => reply.ok ? { ok: /** @type {const} */ (true) } : { ok: /** @type {const} */ (false), code: reply.error.code })
}
