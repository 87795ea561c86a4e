// Encodes a value as one MessagePack message, in one pass: the server encodes every ACK and every
// relayed update. Messages are written one after another into a shared slab and handed out as views
// of it, as Node's Buffer pool does: a Uint8Array of more than 64 bytes made on its own costs an
// allocation outside the heap, which took longer than the whole encoding.
//
// Values encode as notepack.io (the codec of socket.io-msgpack-parser) encodes them in Node, so
// clients of that parser read the same values: integers in their smallest form, other numbers as
// float 64, bytes (any ArrayBuffer or view of one) as `bin`, undefined as nil (and left out of maps,
// with functions), Dates as timestamps, objects with `toJSON` as what it returns, other objects as
// maps of their own enumerable keys. Browser bundles import it through the parser: no Node-only
// imports.

const utf8 = new TextEncoder()
const TIMESTAMP_32_MAX_SECONDS = 0xffffffff
const TIMESTAMP_64_MAX_SECONDS = 0x3ffffffff
/** The slab's size; a message that outgrows what is left moves to a slab of its own. */
const SLAB_BYTES = 8192

let slab = new Uint8Array(SLAB_BYTES)
let view = new DataView(slab.buffer)
/** Where the message being encoded starts in the slab, and where its next byte goes. */
let start = 0
let offset = 0
let encoding = false

/**
 * The bytes of `value` as one MessagePack message: a view that no later message overwrites.
 * @param {unknown} value
 * @returns {Uint8Array}
 */
export function encodeMessage (value) {
  return encode(null, value)
}

/**
 * What every message shaped like `template` starts with: its bytes up to its last value, which
 * must be null (a map's values are written in the order of its keys). A message whose bytes are
 * the same each time but for its last value (a room's relayed update, an ACK) is then written as
 * this head and that value (`encodeAfter`), without encoding the rest again.
 * @param {unknown} template
 * @returns {Uint8Array} a copy, kept by the caller
 */
export function messageHead (template) {
  const message = encodeMessage(template)
  if (message[message.length - 1] !== 0xc0) throw new Error('the template\'s last value is not null')
  return message.slice(0, -1)
}

/**
 * The bytes of a message: `head` (from `messageHead`), then `last` in place of the template's null:
 * the bytes `encodeMessage` gives for the template with `last` there. Not undefined nor a function,
 * which a map leaves out.
 * @param {Uint8Array} head
 * @param {unknown} last
 * @returns {Uint8Array}
 */
export function encodeAfter (head, last) {
  if (!isEncodedInMap(last)) throw new Error(`cannot encode a ${typeof last} in place of a template's null`)
  return encode(head, last)
}

/**
 * Writes one message into the slab, `head`'s bytes (if any) then `value`, and hands out its bytes.
 * @param {Uint8Array | null} head
 * @param {unknown} value
 */
function encode (head, value) {
  // `toJSON` runs in the middle of an encoding; it must not start another.
  if (encoding) throw new Error('encodeMessage is not reentrant')
  encoding = true
  start = offset
  try {
    if (head !== null) {
      reserve(head.length)
      slab.set(head, offset)
      offset += head.length
    }
    writeValue(value)
    const message = slab.subarray(start, offset)
    // A slab grown for one large message is not kept for the small ones after it.
    if (slab.length > SLAB_BYTES) newSlab(SLAB_BYTES)
    return message
  } catch (err) {
    offset = start
    throw err
  } finally {
    encoding = false
  }
}

/** Makes room for `length` more bytes, moving the message to a new slab if this one is full. @param {number} length */
function reserve (length) {
  if (offset + length <= slab.length) return
  const written = slab.subarray(start, offset)
  newSlab(Math.max(SLAB_BYTES, 2 * (written.length + length)))
  slab.set(written)
  offset = written.length
}

/** @param {number} size */
function newSlab (size) {
  slab = new Uint8Array(size)
  view = new DataView(slab.buffer)
  start = 0
  offset = 0
}

/** @param {unknown} value */
function writeValue (value) {
  switch (typeof value) {
    case 'string': return writeString(value)
    case 'number': return writeNumber(value)
    case 'boolean': return writeByte(value ? 0xc3 : 0xc2)
    case 'undefined': return writeByte(0xc0)
    case 'object':
      if (value === null) return writeByte(0xc0)
      if (Array.isArray(value)) return writeArray(value)
      if (value instanceof Uint8Array) return writeBin(value)
      if (value instanceof ArrayBuffer) return writeBin(new Uint8Array(value))
      if (ArrayBuffer.isView(value)) return writeBin(new Uint8Array(value.buffer, value.byteOffset, value.byteLength))
      if (value instanceof Date) return writeDate(value)
      if (typeof (/** @type {any} */ (value).toJSON) === 'function') return writeValue(/** @type {any} */ (value).toJSON())
      return writeMap(/** @type {Record<string, unknown>} */ (value))
  }
  const json = /** @type {any} */ (value)?.toJSON
  if (typeof json === 'function') return writeValue(json.call(value))
  throw new Error(`cannot encode a ${typeof value}`)
}

/** @param {number} byte */
function writeByte (byte) {
  reserve(1)
  slab[offset++] = byte
}

/**
 * A type byte and a big-endian unsigned length of `size` bytes.
 * @param {number} type
 * @param {number} size 1, 2 or 4
 * @param {number} length
 */
function writeHead (type, size, length) {
  reserve(1 + size)
  slab[offset++] = type
  if (size === 1) view.setUint8(offset, length)
  else if (size === 2) view.setUint16(offset, length)
  else view.setUint32(offset, length)
  offset += size
}

/**
 * The head of a string, bin, array or map: the fix form under `fixLimit` (0 when there is none),
 * then the forms of 1 (if `type8`), 2 and 4 bytes of length.
 * @param {number} length
 * @param {number} fixType
 * @param {number} fixLimit
 * @param {number} type8 0 when there is no form of 1 byte
 * @param {number} type16
 */
function writeSized (length, fixType, fixLimit, type8, type16) {
  if (length < fixLimit) writeByte(fixType | length)
  else if (type8 !== 0 && length < 0x100) writeHead(type8, 1, length)
  else if (length < 0x10000) writeHead(type16, 2, length)
  else if (length <= 0xffffffff) writeHead(type16 + 1, 4, length)
  else throw new Error('too large to encode')
}

/** @param {string} string */
function writeString (string) {
  const { length } = string
  if (length < 0x20) {
    // Most strings here are short ASCII (keys, event names, ids): written as they are read, and
    // started again as UTF-8 at the first character that is not ASCII.
    reserve(1 + length)
    const head = offset
    slab[offset++] = 0xa0 | length
    let i = 0
    while (i < length) {
      const code = string.charCodeAt(i)
      if (code >= 0x80) break
      slab[offset++] = code
      i++
    }
    if (i === length) return
    offset = head
  }
  // UTF-8 takes at most 3 bytes per UTF-16 unit; write it past the longest head, then move it back
  // if the head is shorter.
  reserve(5 + 3 * length)
  const text = offset + 5
  const { written } = utf8.encodeInto(string, slab.subarray(text))
  writeSized(written, 0xa0, 0x20, 0xd9, 0xda)
  slab.copyWithin(offset, text, text + written)
  offset += written
}

/** @param {number} value */
function writeNumber (value) {
  if (!Number.isInteger(value)) {
    reserve(9)
    slab[offset++] = 0xcb
    view.setFloat64(offset, value)
    offset += 8
  } else if (value >= 0) {
    if (value < 0x80) writeByte(value)
    else if (value < 0x100) writeHead(0xcc, 1, value)
    else if (value < 0x10000) writeHead(0xcd, 2, value)
    else if (value <= 0xffffffff) writeHead(0xce, 4, value)
    else writeInt64(0xcf, value)
  } else if (value >= -0x20) {
    writeByte(value & 0xff)
  } else {
    reserve(5)
    if (value >= -0x80) {
      slab[offset++] = 0xd0
      view.setInt8(offset++, value)
    } else if (value >= -0x8000) {
      slab[offset++] = 0xd1
      view.setInt16(offset, value)
      offset += 2
    } else if (value >= -0x80000000) {
      slab[offset++] = 0xd2
      view.setInt32(offset, value)
      offset += 4
    } else {
      writeInt64(0xd3, value)
    }
  }
}

/**
 * An integer beyond 32 bits, as notepack.io writes it.
 * @param {number} type 0xcf (unsigned) or 0xd3 (signed)
 * @param {number} value
 */
function writeInt64 (type, value) {
  reserve(9)
  slab[offset++] = type
  view.setInt32(offset, Math.floor(value / 0x100000000))
  view.setUint32(offset + 4, value >>> 0)
  offset += 8
}

/** @param {Uint8Array} bytes */
function writeBin (bytes) {
  writeSized(bytes.length, 0, 0, 0xc4, 0xc5)
  reserve(bytes.length)
  slab.set(bytes, offset)
  offset += bytes.length
}

/** @param {unknown[]} array */
function writeArray (array) {
  writeSized(array.length, 0x90, 0x10, 0, 0xdc)
  for (let i = 0; i < array.length; i++) writeValue(array[i])
}

/** @param {Record<string, unknown>} object */
function writeMap (object) {
  const keys = Object.keys(object)
  if (keys.length < 0x10) {
    // A fixmap: its one byte of head is written once the entries are counted, where it ends up
    // (the message moves to a new slab if it outgrows this one).
    writeByte(0x80)
    const head = offset - 1 - start
    const count = writeEntries(object, keys)
    slab[start + head] = 0x80 | count
    return
  }
  let count = 0
  for (const key of keys) if (isEncodedInMap(object[key])) count++
  writeSized(count, 0x80, 0x10, 0, 0xde)
  writeEntries(object, keys)
}

/**
 * The entries of a map, leaving out those that are not encoded; returns how many were written.
 * @param {Record<string, unknown>} object
 * @param {string[]} keys
 */
function writeEntries (object, keys) {
  let count = 0
  for (const key of keys) {
    const value = object[key]
    if (!isEncodedInMap(value)) continue
    writeString(key)
    writeValue(value)
    count++
  }
  return count
}

/** @param {unknown} value */
const isEncodedInMap = value => value !== undefined && typeof value !== 'function'

/**
 * A timestamp of 32, 64 or 96 bits, the shortest that holds it.
 * @param {Date} date
 */
function writeDate (date) {
  const ms = date.getTime()
  const seconds = Math.floor(ms / 1e3)
  const nanoseconds = (ms - seconds * 1e3) * 1e6
  reserve(15)
  if (seconds >= 0 && nanoseconds >= 0 && seconds <= TIMESTAMP_64_MAX_SECONDS) {
    if (nanoseconds === 0 && seconds <= TIMESTAMP_32_MAX_SECONDS) {
      slab[offset++] = 0xd6
      slab[offset++] = 0xff
      view.setUint32(offset, seconds)
      offset += 4
    } else {
      slab[offset++] = 0xd7
      slab[offset++] = 0xff
      view.setUint32(offset, nanoseconds * 4 + Math.floor(seconds / 0x100000000))
      view.setUint32(offset + 4, seconds >>> 0)
      offset += 8
    }
    return
  }
  slab[offset++] = 0xc7
  slab[offset++] = 12
  slab[offset++] = 0xff
  view.setUint32(offset, nanoseconds)
  view.setInt32(offset + 4, Math.floor(seconds / 0x100000000))
  view.setUint32(offset + 8, seconds >>> 0)
  offset += 12
}
