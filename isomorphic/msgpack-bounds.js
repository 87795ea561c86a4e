// A structural check of one MessagePack message, run before it is decoded. A decoder trusts the
// lengths a message declares: six bytes declaring a 4 GiB ext (`c9 ffffffff 00`) made notepack
// allocate and fill a 4 GiB ArrayBuffer, blocking the event loop for a minute. This walk reads only
// the headers, allocates nothing, and refuses any length or count that the bytes actually present
// cannot hold, so a message that passes declares at most its own size (which the transport already
// bounds by `maxHttpBufferSize`). Browser bundles import it through the parser: no Node-only imports.

/** Nesting of arrays and maps a message may have; Tandem's packets nest three deep. */
export const MAX_MESSAGE_DEPTH = 32

/**
 * Header of each MessagePack prefix from 0xc0 up: [bytes after the prefix that hold the length (or
 * the fixed body), bytes of type before the body, kind]. Kinds: 0 = fixed size, 1 = body of the
 * declared length, 2 = array of the declared count, 3 = map of the declared count, -1 = never used.
 * @type {[number, number, number][]}
 */
const HEADERS = [
  [0, 0, 0], [0, 0, -1], [0, 0, 0], [0, 0, 0], // nil, (never used), false, true
  [1, 0, 1], [2, 0, 1], [4, 0, 1], // bin 8/16/32
  [1, 1, 1], [2, 1, 1], [4, 1, 1], // ext 8/16/32
  [4, 0, 0], [8, 0, 0], // float 32/64
  [1, 0, 0], [2, 0, 0], [4, 0, 0], [8, 0, 0], // uint 8/16/32/64
  [1, 0, 0], [2, 0, 0], [4, 0, 0], [8, 0, 0], // int 8/16/32/64
  [2, 0, 0], [3, 0, 0], [5, 0, 0], [9, 0, 0], [17, 0, 0], // fixext 1/2/4/8/16 (type + body)
  [1, 0, 1], [2, 0, 1], [4, 0, 1], // str 8/16/32
  [2, 0, 2], [4, 0, 2], // array 16/32
  [2, 0, 3], [4, 0, 3] // map 16/32
]

/**
 * Throws unless `bytes` is exactly one MessagePack value whose every declared length and count fits
 * in the bytes that follow it, nested at most MAX_MESSAGE_DEPTH deep.
 * @param {Uint8Array} bytes
 */
export function checkMessageBounds (bytes) {
  const end = bytes.length
  // Values still to read at each open level. Every turn reads at least one byte or closes a level,
  // and only a byte read opens one, so the loop runs at most twice per byte.
  const open = [1]
  let offset = 0
  while (open.length > 0) {
    const top = open.length - 1
    if (open[top] === 0) {
      open.pop()
      continue
    }
    open[top]--
    if (offset >= end) throw new Error('truncated message')
    const prefix = bytes[offset++]
    let kind, length
    if (prefix < 0x80 || prefix >= 0xe0) continue // fixint
    if (prefix < 0x90) {
      kind = 3
      length = prefix & 0x0f
    } else if (prefix < 0xa0) {
      kind = 2
      length = prefix & 0x0f
    } else if (prefix < 0xc0) {
      kind = 1
      length = prefix & 0x1f
    } else {
      const [size, typeBytes, headerKind] = HEADERS[prefix - 0xc0]
      if (headerKind === -1) throw new Error('invalid message byte')
      if (offset + size > end) throw new Error('truncated message')
      if (headerKind === 0) {
        offset += size
        continue
      }
      kind = headerKind
      length = readLength(bytes, offset, size)
      offset += size + typeBytes
    }
    // Each element of an array takes at least a byte, each entry of a map two.
    const least = kind === 1 ? length : kind === 2 ? length : 2 * length
    if (least > end - offset) throw new Error('declared length exceeds the message')
    if (kind === 1) {
      offset += length
    } else if (length > 0) {
      if (open.length >= MAX_MESSAGE_DEPTH) throw new Error('message nested too deep')
      open.push(kind === 3 ? 2 * length : length)
    }
  }
  if (offset !== end) throw new Error('trailing bytes after the message')
}

/** A big-endian unsigned length of 1, 2 or 4 bytes. @param {Uint8Array} bytes @param {number} at @param {number} size */
function readLength (bytes, at, size) {
  let value = 0
  for (let i = 0; i < size; i++) value = value * 256 + bytes[at + i]
  return value
}
