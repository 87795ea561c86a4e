import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import * as sync from 'y-protocols/sync'
import { openWebSocket } from '../../../loadtest/protocols/websocket.js'
import { receiveSync } from './y-sync.js'

// The y-websocket protocol, as y-websocket's WebsocketProvider speaks it: one WebSocket per
// document (named by the URL path), messages of a varUint type (0 sync, 1 awareness) followed by a
// y-protocols sync message (step 1: state vector; step 2: the diff; update) or an awareness update.
// Both sides send step 1 on connect and answer the other's with step 2; the client is synced once
// it has applied the server's step 2. The server relays each update to every connection of the
// document, the sender's included. There is no ACK.

const MESSAGE_SYNC = 0
const MESSAGE_AWARENESS = 1

/** @type {import('../../../loadtest/protocols/index.js').Protocol} */
export const protocol = {
  name: 'y-websocket',
  ack: null,
  connect: options => new YWebsocketConnection(options)
}

class YWebsocketConnection {
  /** @type {import('ws').WebSocket | null} */
  ws = null
  closing = false
  /** @type {import('yjs').Doc | null} */
  ydoc = null
  /** @type {Uint8Array[]} messages that arrived before join() gave the document */
  early = []
  /** @type {((appliedAt: number) => void) | null} */
  onStep2 = null

  /** @param {import('../../../loadtest/protocols/index.js').ConnectOptions} options */
  constructor (options) {
    this.options = options
  }

  async open () {
    const { url, room, timeoutMs, on } = this.options
    this.ws = await openWebSocket(`${url}/${encodeURIComponent(room)}`, timeoutMs, {
      message: data => {
        if (this.ydoc) this.#receive(data)
        else this.early.push(data)
      },
      close: () => { if (!this.closing) on.lost('disconnected') }
    })
  }

  /** @param {import('yjs').Doc} ydoc */
  async join (ydoc) {
    const applied = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('sync timed out')), this.options.timeoutMs)
      this.onStep2 = (appliedAt) => {
        clearTimeout(timer)
        resolve({ appliedAt })
      }
    })
    this.ydoc = ydoc
    for (const message of this.early.splice(0)) this.#receive(message)
    const encoder = encoding.createEncoder()
    encoding.writeVarUint(encoder, MESSAGE_SYNC)
    sync.writeSyncStep1(encoder, ydoc)
    this.ws?.send(encoding.toUint8Array(encoder))
    return /** @type {Promise<{ appliedAt: number }>} */ (applied)
  }

  /** @param {Uint8Array} update */
  send (update) {
    const encoder = encoding.createEncoder()
    encoding.writeVarUint(encoder, MESSAGE_SYNC)
    sync.writeUpdate(encoder, update)
    this.ws?.send(encoding.toUint8Array(encoder))
    return null
  }

  /** @param {Uint8Array} update */
  sendAwareness = (update) => {
    const encoder = encoding.createEncoder()
    encoding.writeVarUint(encoder, MESSAGE_AWARENESS)
    encoding.writeVarUint8Array(encoder, update)
    this.ws?.send(encoding.toUint8Array(encoder))
  }

  close () {
    this.closing = true
    this.ws?.close()
  }

  /** @param {Uint8Array} message */
  #receive (message) {
    const decoder = decoding.createDecoder(message)
    const type = decoding.readVarUint(decoder)
    if (type === MESSAGE_AWARENESS) {
      this.options.on.awareness(decoding.readVarUint8Array(decoder))
      return
    }
    if (type !== MESSAGE_SYNC) return
    receiveSync(decoder, this, (stateVector) => {
      const encoder = encoding.createEncoder()
      encoding.writeVarUint(encoder, MESSAGE_SYNC)
      sync.writeSyncStep2(encoder, /** @type {import('yjs').Doc} */ (this.ydoc), stateVector)
      this.ws?.send(encoding.toUint8Array(encoder))
    })
  }
}
