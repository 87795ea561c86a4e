// Decodes one MessagePack message, trusting nothing it declares: before anything is allocated for a
// length or a count, the bytes that follow must be able to hold it, so a message declares at most its
// own size (which the transport bounds by `maxHttpBufferSize`). Six bytes declaring a 4 GiB ext
// (`c9 ffffffff 00`) made a decoder that trusts lengths allocate and fill 4 GiB, blocking the event
// loop for a minute.
//
// Values decode as notepack.io (the codec of socket.io-msgpack-parser) decodes them, so any client of
// that parser reads and is read the same: bin as a view of the frame's bytes, ext type 0 as an
// ArrayBuffer, fixext 1 of type 0 as undefined, timestamps as Dates, other exts as [type, bytes],
// maps as objects whose keys are assigned in order. Unlike notepack.io, a map key must be a string or
// an integer, and a `__proto__` key is an own field, never the prototype: any other key would be
// turned into a property name by code the message chooses (a map key `{__proto__: [], length: n}`
// runs Array.prototype.join over n elements before a single check sees the packet).
//
// One pass, for speed as much as for safety: it runs on every message a client sends. Short ASCII
// strings, the keys and event names that every packet repeats, come from a small cache rather than
// a new string each time. Browser bundles import it through the parser: no Node-only imports.

/** Nesting of arrays and maps a message may have; Tandem's packets nest three deep. */
export const MAX_MESSAGE_DEPTH = 32

/** Strings up to this many bytes may come from the cache. */
const CACHED_STRING_BYTES = 32
const CACHE_SLOTS = 512

const utf8 = new TextDecoder()
/** @type {string[]} */
const cachedStrings = new Array(CACHE_SLOTS).fill('')
/** Character codes of a short string, one array per length, reused. */
const codeArrays = Array.from({ length: CACHED_STRING_BYTES + 1 }, (_, length) => new Array(length).fill(0))

// The message being decoded. Decoding is synchronous and calls out to nothing, so one decode at a
// time holds these.
/** @type {Uint8Array} */
const EMPTY = new Uint8Array(0)
let bytes = EMPTY
let offset = 0
let end = 0

/**
 * The value of `message`, which must be exactly one MessagePack value nested at most
 * MAX_MESSAGE_DEPTH deep; throws otherwise.
 * @param {Uint8Array} message
 * @returns {unknown}
 */
export function decodeMessage (message) {
  bytes = message
  offset = 0
  end = message.length
  try {
    const value = readValue(0)
    if (offset !== end) throw new Error('trailing bytes after the message')
    return value
  } finally {
    bytes = EMPTY // not kept past the call
  }
}

/** @param {number} depth arrays and maps open around this value */
function readValue (depth) {
  if (offset >= end) throw new Error('truncated message')
  const prefix = bytes[offset++]
  if (prefix < 0x80) return prefix // positive fixint
  if (prefix < 0x90) return readMap(prefix & 0x0f, depth)
  if (prefix < 0xa0) return readArray(prefix & 0x0f, depth)
  if (prefix < 0xc0) return readString(prefix & 0x1f)
  if (prefix >= 0xe0) return prefix - 0x100 // negative fixint
  switch (prefix) {
    case 0xc0: return null
    case 0xc2: return false
    case 0xc3: return true
    case 0xc4: return readBin(readUint(1))
    case 0xc5: return readBin(readUint(2))
    case 0xc6: return readBin(readUint(4))
    case 0xc7: return readExt(readUint(1))
    case 0xc8: return readExt(readUint(2))
    case 0xc9: return readExt(readUint(4))
    case 0xca: return view(4).getFloat32(0)
    case 0xcb: return view(8).getFloat64(0)
    case 0xcc: return readUint(1)
    case 0xcd: return readUint(2)
    case 0xce: return readUint(4)
    case 0xcf: return readUint(4) * 0x100000000 + readUint(4)
    case 0xd0: return (readUint(1) << 24) >> 24
    case 0xd1: return (readUint(2) << 16) >> 16
    case 0xd2: return readInt32()
    case 0xd3: return readInt32() * 0x100000000 + readUint(4)
    case 0xd4: return readFixExt(1)
    case 0xd5: return readFixExt(2)
    case 0xd6: return readFixExt(4)
    case 0xd7: return readFixExt(8)
    case 0xd8: return readFixExt(16)
    case 0xd9: return readString(readUint(1))
    case 0xda: return readString(readUint(2))
    case 0xdb: return readString(readUint(4))
    case 0xdc: return readArray(readUint(2), depth)
    case 0xdd: return readArray(readUint(4), depth)
    case 0xde: return readMap(readUint(2), depth)
    case 0xdf: return readMap(readUint(4), depth)
  }
  throw new Error('invalid message byte') // 0xc1, which MessagePack never uses
}

/** Refuses a length the rest of the message cannot hold. @param {number} length */
function need (length) {
  if (length > end - offset) throw new Error('declared length exceeds the message')
}

/** A big-endian unsigned integer of 1, 2 or 4 bytes. @param {number} size */
function readUint (size) {
  need(size)
  let value = 0
  for (let i = 0; i < size; i++) value = value * 256 + bytes[offset++]
  return value
}

/** The next `size` bytes, for reading a number from. @param {number} size */
function view (size) {
  need(size)
  const at = offset
  offset += size
  return new DataView(bytes.buffer, bytes.byteOffset + at, size)
}

/** @param {number} length */
function readBin (length) {
  need(length)
  const start = offset
  offset += length
  return bytes.subarray(start, offset)
}

/** @param {number} length */
function readString (length) {
  need(length)
  const start = offset
  offset += length
  if (length <= CACHED_STRING_BYTES) {
    const cached = cachedAscii(start, length)
    if (cached !== null) return cached
  }
  return utf8.decode(bytes.subarray(start, offset))
}

/**
 * A short ASCII string from the cache, put there if it was not; null if it is not ASCII. The slot
 * is chosen by the length and three of the bytes, so a hit reads the bytes once, to compare them.
 * @param {number} start
 * @param {number} length
 */
function cachedAscii (start, length) {
  if (length === 0) return ''
  const last = start + length - 1
  const slot = (length * 613 + bytes[start] * 31 + bytes[(start + last) >> 1] * 7 + bytes[last]) & (CACHE_SLOTS - 1)
  const cached = cachedStrings[slot]
  if (cached.length === length) {
    let same = true
    for (let i = 0; i < length && same; i++) same = cached.charCodeAt(i) === bytes[start + i]
    if (same) return cached
  }
  const codes = codeArrays[length]
  for (let i = 0; i < length; i++) {
    const code = bytes[start + i]
    if (code >= 0x80) return null
    codes[i] = code
  }
  const string = String.fromCharCode.apply(null, codes)
  cachedStrings[slot] = string
  return string
}

/**
 * An extension of a declared length: notepack.io's ArrayBuffer (type 0, a copy, as it makes one),
 * a timestamp of 12 bytes, or [type, bytes].
 * @param {number} length
 */
function readExt (length) {
  need(1 + length)
  const type = readType()
  if (type === 0) {
    const start = offset
    offset += length
    return new Uint8Array(bytes.subarray(start, offset)).buffer
  }
  if (type === TIMESTAMP && length === 12) {
    const nanoseconds = readUint(4)
    const seconds = readInt32() * 0x100000000 + readUint(4)
    return new Date(seconds * 1e3 + nanoseconds / 1e6)
  }
  return [type, readBin(length)]
}

/**
 * A fixed-length extension: notepack.io's undefined (1 byte, type 0) and old Date (8 bytes, type
 * 0), a timestamp of 4 or 8 bytes, or [type, bytes].
 * @param {number} length
 */
function readFixExt (length) {
  need(1 + length)
  const type = readType()
  if (type === 0 && length === 1) {
    offset++
    return undefined
  }
  if (type === 0 && length === 8) return new Date(readInt32() * 0x100000000 + readUint(4))
  if (type === TIMESTAMP && length === 4) return new Date(readUint(4) * 1e3)
  if (type === TIMESTAMP && length === 8) {
    const high = readUint(4)
    const low = readUint(4)
    return new Date(((high & 0x3) * 0x100000000 + low) * 1e3 + (high >>> 2) / 1e6)
  }
  return [type, readBin(length)]
}

/** MessagePack's timestamp extension. */
const TIMESTAMP = -1

/** An extension's type, a signed byte. */
function readType () {
  return (readUint(1) << 24) >> 24
}

/** A big-endian signed 32-bit integer. */
function readInt32 () {
  return readUint(4) | 0
}

/**
 * @param {number} count
 * @param {number} depth
 */
function readArray (count, depth) {
  need(count) // each element takes at least a byte
  if (count > 0 && depth >= MAX_MESSAGE_DEPTH) throw new Error('message nested too deep')
  const array = new Array(count)
  for (let i = 0; i < count; i++) array[i] = readValue(depth + 1)
  return array
}

/**
 * @param {number} count
 * @param {number} depth
 */
function readMap (count, depth) {
  need(2 * count) // each entry takes at least two bytes
  if (count > 0 && depth >= MAX_MESSAGE_DEPTH) throw new Error('message nested too deep')
  /** @type {Record<string | number, unknown>} */
  const map = {}
  for (let i = 0; i < count; i++) {
    // Refused by its first byte, so no value of another kind is ever decoded as a key.
    if (offset < end && !isKeyByte(bytes[offset])) throw new Error('map key is not a string or an integer')
    const key = /** @type {string | number} */ (readValue(depth + 1))
    const value = readValue(depth + 1)
    if (key === '__proto__') Object.defineProperty(map, key, { value, enumerable: true, writable: true, configurable: true })
    else map[key] = value
  }
  return map
}

/** Whether a value starting with this byte is a string or an integer. @param {number} prefix */
function isKeyByte (prefix) {
  return prefix < 0x80 || prefix >= 0xe0 || // fixints
    (prefix >= 0xa0 && prefix < 0xc0) || (prefix >= 0xd9 && prefix <= 0xdb) || // strings
    (prefix >= 0xcc && prefix <= 0xd3) // uint and int of 8 to 64 bits
}
