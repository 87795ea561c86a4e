import { EVENTS } from '../../isomorphic/events.js'
import { decodeMessage } from '../../isomorphic/msgpack-decode.js'
import { EVENT, PARSER } from '../../isomorphic/parser.js'
import { openWebSocket } from './websocket.js'
import { joinRoom, sendUpdate } from './tandem.js'

// Tandem's protocol (docs/PROTOCOL.md), the same bytes as tandem.js sends, spoken over a bare `ws`
// WebSocket as the peers' clients speak theirs (bench/peers/clients/): Engine.IO v4's WebSocket
// transport (text frames for its own packets, binary frames for messages) carrying Socket.IO v5
// packets in Tandem's MessagePack parser. It does without socket.io-client's managers, emitters and
// per-packet objects, so one generator core holds more editors before its own delays show in the
// figures. The shipped client's code path is what tandem.js measures.

const CONNECT = 0
const ACK = 3
const CONNECT_ERROR = 4
// Engine.IO packet types, the first character of a text frame.
const EIO_OPEN = '0'
const EIO_CLOSE = '1'
const EIO_PING = '2'
const EIO_PONG = '3'

// socket.io-client's packets carry `options` and list their keys in this order: with them, an event
// here is the same bytes as the shipped client's, and the server decodes the same map.
const COMPRESS = Object.freeze({ compress: true })
const encoder = new PARSER.Encoder()
/** @param {object} packet */
const encodePacket = packet => encoder.encode(packet)[0]

/** @type {import('./index.js').Protocol} */
export const protocol = {
  name: 'tandem',
  ack: 'stored',
  connect: options => new TandemWireConnection(options)
}

class TandemWireConnection {
  /** @type {import('ws').WebSocket | null} */
  ws = null
  closing = false
  #nextId = 0
  /** @type {Map<number, (reply: any, err?: Error) => void>} requests waiting for their ACK, by packet id */
  #pending = new Map()
  /** @type {((packet: any) => void) | null} */
  #onConnect = null

  /** @param {import('./index.js').ConnectOptions} options */
  constructor (options) {
    this.options = options
  }

  async open () {
    const { url, token, timeoutMs, on } = this.options
    const wsUrl = `${url.replace(/^http/, 'ws')}/socket.io/?EIO=4&transport=websocket`
    const ws = await openWebSocket(wsUrl, timeoutMs, {
      message: (data, isBinary) => this.#onFrame(data, isBinary),
      close: () => {
        this.#failPending(new Error('disconnected'))
        // Before the server's CONNECT, the failure is the connection's: open() rejects.
        if (this.#onConnect) this.#onConnect({ type: CONNECT_ERROR, data: { message: 'closed while connecting' } })
        else if (!this.closing) on.lost('disconnected')
      }
    })
    this.ws = ws
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#onConnect = null
        this.closing = true
        ws.terminate()
        reject(new Error('Socket.IO connect timed out'))
      }, timeoutMs)
      this.#onConnect = (packet) => {
        this.#onConnect = null
        clearTimeout(timer)
        if (packet.type === CONNECT) resolve(undefined)
        else reject(new Error(`connect refused: ${packet.data?.message ?? 'unknown'}`))
      }
      // socket.io-client's CONNECT: the auth as its data.
      ws.send(encodePacket({ type: CONNECT, data: token ? { token } : undefined, nsp: '/' }))
    })
  }

  /** @param {import('yjs').Doc} ydoc */
  join (ydoc) {
    return joinRoom(this.#request, this.options, ydoc)
  }

  /** @param {Uint8Array} update */
  send (update) {
    return sendUpdate(this.#request, this.options.room, update)
  }

  /** @param {Uint8Array} update */
  sendAwareness = (update) => {
    this.ws?.send(encodePacket({ type: EVENT, data: [EVENTS.AWARENESS, { doc: this.options.room, update }], options: COMPRESS, nsp: '/' }))
  }

  close () {
    this.closing = true
    this.#failPending(new Error('closed'))
    this.ws?.close()
  }

  /**
   * A frame the server sent. One this client cannot read ends the connection (reported as lost),
   * not the generator's thread.
   * @param {Buffer} data
   * @param {boolean} isBinary
   */
  #onFrame (data, isBinary) {
    try {
      if (isBinary) this.#onPacket(decodeMessage(data))
      else this.#onEngineText(String(data))
    } catch {
      this.ws?.terminate()
    }
  }

  /** Rejects every request still waiting for its ACK, as socket.io-client does on a disconnect. @param {Error} err */
  #failPending (err) {
    for (const settle of this.#pending.values()) settle(null, err)
    this.#pending.clear()
  }

  /** @param {string} text an Engine.IO packet of its own: the handshake, a ping, a close */
  #onEngineText (text) {
    if (text[0] === EIO_PING) this.ws?.send(EIO_PONG)
    else if (text[0] === EIO_CLOSE) this.ws?.close()
    else if (text[0] !== EIO_OPEN) throw new Error(`unexpected Engine.IO packet ${text.slice(0, 20)}`)
  }

  /** @param {any} packet a decoded Socket.IO packet */
  #onPacket (packet) {
    const { on } = this.options
    if (packet.type === EVENT) {
      const [event, payload] = packet.data
      if (event === EVENTS.UPDATE) on.update(new Uint8Array(payload.update))
      else if (event === EVENTS.AWARENESS) on.awareness(new Uint8Array(payload.update))
      else if (event === EVENTS.CLOSED) on.lost('closed')
    } else if (packet.type === ACK) {
      const settle = this.#pending.get(packet.id)
      this.#pending.delete(packet.id)
      settle?.(packet.data[0])
    } else if (packet.type === CONNECT || packet.type === CONNECT_ERROR) {
      this.#onConnect?.(packet)
    }
  }

  /** Emits `event` with an ACK id; resolves with the reply, rejects after `timeoutMs`. @type {import('./tandem.js').Request} */
  #request = (event, payload) => {
    const id = this.#nextId++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(id)
        reject(new Error('operation has timed out'))
      }, this.options.timeoutMs)
      this.#pending.set(id, (reply, err) => {
        clearTimeout(timer)
        if (err) reject(err)
        else resolve(reply)
      })
      this.ws?.send(encodePacket({ type: EVENT, data: [event, payload], options: COMPRESS, id, nsp: '/' }))
    })
  }
}
