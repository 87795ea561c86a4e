// The Socket.IO parser Tandem speaks: every packet is one MessagePack message, the format of
// socket.io-msgpack-parser (the MessagePack parser Socket.IO's documentation names), so any client
// on that parser, in any language, can talk to Tandem. The default parser sends a packet with binary
// as a JSON header frame plus one frame per attachment, so each update cost every receiver two
// WebSocket frames (two writes); here it costs one, encoded once per broadcast.
//
// Decoding is socket.io-msgpack-parser's own Decoder, with what it lacks for a server that faces
// strangers: the bounds walk before anything is decoded (msgpack-bounds.js), and refusal of event
// names Socket.IO reserves and of maps that are not plain objects. Encoding writes bytes as
// MessagePack `bin`, which every MessagePack library reads as bytes; socket.io-msgpack-parser's
// Encoder writes a Uint8Array that is not a Buffer (what Yjs returns) as notepack's ArrayBuffer
// extension (ext type 0), which only notepack reads as bytes.
// Server, shipped client and load test all import this module. It is imported by browser bundles,
// so it must stay free of Node-only imports.
import { encode } from 'notepack.io'
import { Decoder as MsgpackDecoder } from 'socket.io-msgpack-parser'
import { checkMessageBounds } from './msgpack-bounds.js'

/** Socket.IO packet types (socket.io-protocol v5). */
const CONNECT = 0
const DISCONNECT = 1
const CONNECT_ERROR = 4
/** An event packet's type: what the server encodes itself when it writes to sockets directly. */
export const EVENT = 2
/** MessagePack's `bin 8` prefix. */
const BIN_8 = 0xc4

// Event names Socket.IO and EventEmitter use themselves (socket.io-parser's list, plus `error`): a
// client emitting `disconnect` would otherwise run the server's own disconnect handler.
const RESERVED_EVENTS = new Set(['connect', 'connect_error', 'disconnect', 'disconnecting', 'error', 'newListener', 'removeListener'])

export class Encoder {
  /**
   * @param {object} packet a Socket.IO packet
   * @returns {Uint8Array[]} one frame
   */
  encode (packet) {
    return [toBytes(encode(VIEWS_ENCODE_AS_BINARY ? packet : withArrayBuffers(packet)))]
  }
}

// notepack's Node build encodes any Uint8Array as MessagePack binary; its browser build only an
// ArrayBuffer (a Uint8Array would become a map of its indices). Tested once, not assumed.
const VIEWS_ENCODE_AS_BINARY = toBytes(encode(new Uint8Array([1])))[0] === BIN_8

/**
 * A copy of `value` with every byte view replaced by an ArrayBuffer of its bytes.
 * @param {any} value
 * @returns {any}
 */
function withArrayBuffers (value) {
  if (ArrayBuffer.isView(value)) {
    const { buffer, byteOffset, byteLength } = value
    return byteOffset === 0 && byteLength === buffer.byteLength ? buffer : buffer.slice(byteOffset, byteOffset + byteLength)
  }
  if (Array.isArray(value)) return value.map(withArrayBuffers)
  if (isPlainObject(value)) {
    /** @type {Record<string, unknown>} */
    const copy = {}
    for (const key of Object.keys(value)) copy[key] = withArrayBuffers(value[key])
    return copy
  }
  return value
}

/**
 * Decodes frames into packets, emitted as `decoded`; a malformed frame throws (Socket.IO then closes
 * the connection). Declared lengths are checked against the frame before anything is decoded.
 */
export class Decoder extends MsgpackDecoder {
  /** @param {unknown} frame */
  add (frame) {
    checkMessageBounds(bytesOf(frame))
    super.add(frame)
  }

  /**
   * Called by `add` on each decoded packet, before it is emitted.
   * @param {any} packet
   */
  checkPacket (packet) {
    checkPacket(packet)
  }
}

/**
 * The checks of Socket.IO's default parser: a client's packet reaches no handler unless its shape
 * is right. socket.io-msgpack-parser makes all but two (the packet must be a plain object; its
 * event name must not be one Socket.IO reserves); they are all here, so none depends on its version.
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
 * An object literal's shape: a decoded map with a `__proto__` key has another prototype.
 * @param {unknown} value
 */
function isPlainObject (value) {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype
}

/**
 * notepack encodes to a Buffer in Node and to an ArrayBuffer in browsers; the transport takes both,
 * but typed callers want bytes.
 * @param {Uint8Array | ArrayBuffer} encoded
 */
function toBytes (encoded) {
  return encoded instanceof Uint8Array ? encoded : new Uint8Array(encoded)
}

/** The `parser` option of Socket.IO's server and client. */
export const PARSER = Object.freeze({ Encoder, Decoder })
