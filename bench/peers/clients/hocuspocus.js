import * as decoding from 'lib0/decoding'
import * as encoding from 'lib0/encoding'
import * as sync from 'y-protocols/sync'
import { OrderedAcks, openWebSocket } from '../../../loadtest/protocols/websocket.js'
import { receiveSync } from './y-sync.js'

// Hocuspocus's protocol, as @hocuspocus/provider speaks it: every message starts with the document
// name (varString) and a varUint type, so one WebSocket can carry several documents. The client
// authenticates first (Auth/Token; with no onAuthenticate hook any token passes), then syncs with
// y-protocols sync messages like y-websocket. The server relays each update to every connection of
// the document, the sender's included, and answers every update and step 2 it applied with a
// SyncStatus message, in order: that is the ACK measured here. With default settings (no storage
// extension) it means "applied in memory", not "stored".

// @hocuspocus/server's MessageType and AuthMessageType.
const TYPE = Object.freeze({ SYNC: 0, AWARENESS: 1, AUTH: 2, CLOSE: 7, SYNC_STATUS: 8 })
const AUTH = Object.freeze({ TOKEN: 0, PERMISSION_DENIED: 1, AUTHENTICATED: 2 })

/** @type {import('../../../loadtest/protocols/index.js').Protocol} */
export const protocol = {
  name: 'hocuspocus',
  ack: 'applied in memory (SyncStatus)',
  connect: options => new HocuspocusConnection(options)
}

class HocuspocusConnection {
  /** @type {import('ws').WebSocket | null} */
  ws = null
  closing = false
  /** @type {import('yjs').Doc | null} */
  ydoc = null
  /** @type {((appliedAt: number) => void) | null} */
  onStep2 = null
  /** @type {((error: Error | null) => void) | null} */
  onAuth = null
  /** @type {Promise<import('../../../loadtest/protocols/index.js').Ack> | null} the ACK of this client's step 2 */
  diffAck = null

  /** @param {import('../../../loadtest/protocols/index.js').ConnectOptions} options */
  constructor (options) {
    this.options = options
    this.acks = new OrderedAcks(options.timeoutMs)
  }

  async open () {
    const { url, timeoutMs, on } = this.options
    this.ws = await openWebSocket(url, timeoutMs, {
      message: data => this.#receive(data),
      close: () => { if (!this.closing) on.lost('disconnected') }
    })
  }

  /** @param {import('yjs').Doc} ydoc */
  async join (ydoc) {
    const { timeoutMs, token } = this.options
    this.ydoc = ydoc
    const authenticated = this.#within(timeoutMs, 'authentication', (done) => {
      this.onAuth = error => error ? done(error) : done(null)
    })
    const applied = this.#within(timeoutMs, 'sync', (done) => {
      this.onStep2 = (appliedAt) => done(null, appliedAt)
    })
    this.#send(TYPE.AUTH, encoder => {
      encoding.writeVarUint(encoder, AUTH.TOKEN)
      encoding.writeVarString(encoder, token ?? '')
    })
    this.#send(TYPE.SYNC, encoder => sync.writeSyncStep1(encoder, ydoc))
    const [, appliedAt] = await Promise.all([authenticated, applied])
    // The server's step 1 came before its step 2, and this client's answer to it (its diff) is
    // acknowledged in turn: synced once that ACK is back.
    const ack = await this.diffAck
    if (ack && !ack.ok) throw new Error(`sync refused: ${ack.code}`)
    return { appliedAt: /** @type {number} */ (appliedAt) }
  }

  /** @param {Uint8Array} update */
  send (update) {
    this.#send(TYPE.SYNC, encoder => sync.writeUpdate(encoder, update))
    return this.acks.expect()
  }

  /** @param {Uint8Array} update */
  sendAwareness = (update) => {
    this.#send(TYPE.AWARENESS, encoder => encoding.writeVarUint8Array(encoder, update))
  }

  close () {
    this.closing = true
    this.ws?.close()
  }

  /**
   * @param {number} type
   * @param {(encoder: encoding.Encoder) => void} write
   */
  #send (type, write) {
    const encoder = encoding.createEncoder()
    encoding.writeVarString(encoder, this.options.room)
    encoding.writeVarUint(encoder, type)
    write(encoder)
    this.ws?.send(encoding.toUint8Array(encoder))
  }

  /** @param {Uint8Array} message */
  #receive (message) {
    const decoder = decoding.createDecoder(message)
    if (decoding.readVarString(decoder) !== this.options.room) return
    switch (decoding.readVarUint(decoder)) {
      case TYPE.SYNC:
        receiveSync(decoder, this, (stateVector) => {
          this.#send(TYPE.SYNC, encoder => sync.writeSyncStep2(encoder, /** @type {import('yjs').Doc} */ (this.ydoc), stateVector))
          this.diffAck = this.acks.expect()
          // Awaited by join(), unless join already failed: never an unhandled rejection.
          this.diffAck.catch(() => {})
        })
        break
      case TYPE.AWARENESS:
        this.options.on.awareness(decoding.readVarUint8Array(decoder))
        break
      case TYPE.AUTH: {
        const kind = decoding.readVarUint(decoder)
        const reason = decoding.readVarString(decoder)
        if (kind === AUTH.AUTHENTICATED) this.onAuth?.(null)
        else if (kind === AUTH.PERMISSION_DENIED) this.onAuth?.(new Error(`join refused: ${reason}`))
        break
      }
      case TYPE.SYNC_STATUS:
        this.acks.answer(decoding.readVarUint(decoder) === 1 ? { ok: true } : { ok: false, code: 'NOT_APPLIED' })
        break
      case TYPE.CLOSE:
        this.options.on.lost('closed')
        break
    }
  }

  /**
   * A promise settled by `arm`'s callback, or rejected after `timeoutMs`.
   * @param {number} timeoutMs
   * @param {string} what
   * @param {(done: (error: Error | null, value?: unknown) => void) => void} arm
   */
  #within (timeoutMs, what, arm) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what} timed out`)), timeoutMs)
      arm((error, value) => {
        clearTimeout(timer)
        if (error) reject(error)
        else resolve(value)
      })
    })
  }
}
