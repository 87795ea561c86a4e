// The Socket.IO parser Tandem speaks: every packet is one MessagePack message, the format of
// socket.io-msgpack-parser (the MessagePack parser Socket.IO's documentation names), so any client
// on that parser, in any language, can talk to Tandem. The default parser sends a packet with binary
// as a JSON header frame plus one frame per attachment, so each update cost every receiver two
// WebSocket frames (two writes); here it costs one, encoded once per broadcast.
//
// The MessagePack codec is Tandem's own (msgpack-decode.js, msgpack-encode.js), reading and writing
// what socket.io-msgpack-parser's codec (notepack.io) reads and writes, with what that lacks for a
// server that faces strangers: no length a message declares is trusted, and event names Socket.IO
// reserves and maps that are not plain objects are refused. It also costs less: 4.1 % of the server's
// busy time at 600 editors, where notepack.io took 6.8 % (docs/PERFORMANCE.md). Bytes are written
// as MessagePack `bin`, which every MessagePack library reads as bytes (socket.io-msgpack-parser
// writes a Uint8Array that is not a Buffer, what Yjs returns, as notepack's ArrayBuffer extension,
// ext type 0, which only notepack reads as bytes).
// Server, shipped client and load test all import this module. It is imported by browser bundles,
// so it must stay free of Node-only imports.
import { Emitter } from '@socket.io/component-emitter'
import { decodeMessage } from './msgpack-decode.js'
import { encodeAfter, encodeMessage, messageHead } from './msgpack-encode.js'

/** Socket.IO packet types (socket.io-protocol v5). */
const CONNECT = 0
const DISCONNECT = 1
const CONNECT_ERROR = 4
/** An event packet's type: what the server encodes itself when it writes to sockets directly. */
export const EVENT = 2

// Event names Socket.IO and EventEmitter use themselves (socket.io-parser's list, plus `error`): a
// client emitting `disconnect` would otherwise run the server's own disconnect handler.
const RESERVED_EVENTS = new Set(['connect', 'connect_error', 'disconnect', 'disconnecting', 'error', 'newListener', 'removeListener'])

export class Encoder {
  /**
   * @param {object} packet a Socket.IO packet
   * @returns {Uint8Array[]} one frame
   */
  encode (packet) {
    return [encodeMessage(packet)]
  }
}

/**
 * A packet the server writes itself (write-frame.js) again and again, alike but for one value: a
 * room's relayed update, an accepted update's ACK. The rest of its bytes are encoded once.
 */
export class PacketTemplate {
  /** @param {object} packet null where the value that changes goes, as its last value */
  constructor (packet) {
    this.head = messageHead(packet)
  }

  /**
   * The bytes of the packet with `value` in place of its null.
   * @param {unknown} value
   * @returns {Uint8Array}
   */
  encode (value) {
    return encodeAfter(this.head, value)
  }
}

/**
 * Decodes frames into packets, emitted as `decoded`; a malformed frame throws (Socket.IO then closes
 * the connection).
 * @extends {Emitter<{ decoded: (packet: any) => void }, { decoded: (packet: any) => void }>}
 */
export class Decoder extends Emitter {
  /** @param {unknown} frame */
  add (frame) {
    const packet = decodeMessage(bytesOf(frame))
    checkPacket(packet)
    this.emit('decoded', packet)
  }

  destroy () {}
}

/**
 * The checks of Socket.IO's default parser, and two more (the packet must be a plain object; its
 * event name must not be one Socket.IO reserves): a client's packet reaches no handler unless its
 * shape is right.
 * @param {any} packet
 */
function checkPacket (packet) {
  if (typeof packet !== 'object' || packet === null) throw new Error('invalid packet')
  const { type, nsp, data, id } = packet
  if (!Number.isInteger(type) || type < CONNECT || type > CONNECT_ERROR) throw new Error('invalid packet type')
  if (typeof nsp !== 'string') throw new Error('invalid namespace')
  const dataValid = type === CONNECT
    ? data === undefined || isPlainObject(data)
    : type === DISCONNECT
      ? data === undefined
      : type === CONNECT_ERROR
        ? typeof data === 'string' || isPlainObject(data)
        : Array.isArray(data)
  if (!dataValid) throw new Error('invalid payload')
  if (type === EVENT && !(typeof data[0] === 'string' && !RESERVED_EVENTS.has(data[0]))) {
    throw new Error('invalid event name')
  }
  if (id !== undefined && !Number.isInteger(id)) throw new Error('invalid packet id')
}

/**
 * The bytes of a frame: a Buffer in Node, an ArrayBuffer in browsers; anything else is refused.
 * @param {unknown} frame
 * @returns {Uint8Array}
 */
function bytesOf (frame) {
  if (frame instanceof Uint8Array) return frame
  if (frame instanceof ArrayBuffer) return new Uint8Array(frame)
  throw new Error('expected a binary frame')
}

/**
 * An object literal's shape: checked exactly, so that no value with another prototype passes for one.
 * @param {unknown} value
 */
function isPlainObject (value) {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype
}

/** The `parser` option of Socket.IO's server and client. */
export const PARSER = Object.freeze({ Encoder, Decoder })
