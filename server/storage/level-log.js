// Checks LevelDB's write-ahead logs (and MANIFESTs) before LevelDB reads them: without paranoid
// checks (classic-level has none) it would silently drop a record failing its checksum, the rest of
// its block with it, and delete the log; the server refuses to start instead. Format:
// leveldb/doc/log_format.md (32 KiB blocks of records with 7-byte headers).
const BLOCK = 32 * 1024
const HEADER = 7
/** Record types: a whole record, or the first, a middle or the last fragment of one. */
const FULL = 1
const FIRST = 2
const MIDDLE = 3
const LAST = 4

/**
 * @typedef {object} LogDamage
 * @property {number} offset byte offset of the first record LevelDB would drop
 * @property {number} bytes how many bytes it would drop
 * @property {string} problem
 */

/**
 * @typedef {object} LogCheck
 * @property {number} records records whose checksum holds
 * @property {LogDamage | null} damage a bad record before the end: LevelDB would drop it and the rest of its block
 * @property {number} tornBytes bytes of an incomplete last record, as a write cut short leaves
 */

/** @param {Uint8Array} log the content of one *.log file @returns {LogCheck} */
export function checkLog (log) {
  let records = 0
  const walk = fragments(log)
  // Bounded: `fragments` ends at the end of the log.
  for (let next = walk.next(); ; next = walk.next()) {
    if (next.done) return { records, ...next.value }
    records++
  }
}

/** Whole records, fragments joined, up to the first damaged or cut short. @param {Uint8Array} log */
export function * logRecords (log) {
  /** @type {Uint8Array[]} */
  let parts = []
  for (const { type, data } of fragments(log)) {
    if (type === FULL) {
      parts = []
      yield data
    } else if (type === FIRST) {
      parts = [data]
    } else if (parts.length > 0 && type === MIDDLE) {
      parts.push(data)
    } else if (parts.length > 0 && type === LAST) {
      yield Buffer.concat([...parts, data])
      parts = []
    }
  }
}

/**
 * @param {Uint8Array} log
 * @returns {Generator<{ type: number, data: Uint8Array }, { damage: LogDamage | null, tornBytes: number }>}
 */
function * fragments (log) {
  const view = new DataView(log.buffer, log.byteOffset, log.byteLength)
  let offset = 0
  // Bounded: every turn moves `offset` forward by at least one byte.
  while (offset < log.length) {
    const blockLeft = BLOCK - (offset % BLOCK)
    const blockEnd = Math.min(offset + blockLeft, log.length)
    if (blockLeft < HEADER) {
      offset += blockLeft
      continue
    }
    if (log.length - offset < HEADER) return { damage: null, tornBytes: log.length - offset }
    const length = view.getUint16(offset + 4, true)
    const type = log[offset + 6]
    // Zeroes: space a writer reserved but never filled; LevelDB skips the rest of the block.
    if (type === 0 && length === 0) {
      offset = blockEnd
      continue
    }
    if (HEADER + length > blockLeft) {
      return { damage: { offset, bytes: blockEnd - offset, problem: 'bad record length' }, tornBytes: 0 }
    }
    if (offset + HEADER + length > log.length) return { damage: null, tornBytes: log.length - offset }
    const expected = unmask(view.getUint32(offset, true))
    if (crc32c(log.subarray(offset + 6, offset + HEADER + length)) !== expected) {
      return { damage: { offset, bytes: blockEnd - offset, problem: 'checksum mismatch' }, tornBytes: 0 }
    }
    yield { type, data: log.subarray(offset + HEADER, offset + HEADER + length) }
    offset += HEADER + length
  }
  return { damage: null, tornBytes: 0 }
}

/** LevelDB's varint, read at `at.pos` and moved past. @param {Uint8Array} bytes @param {{ pos: number }} at */
export function readVarint (bytes, at) {
  let value = 0
  for (let shift = 0; shift < 64; shift += 7) {
    if (at.pos >= bytes.length) throw new Error('varint past the end')
    const byte = bytes[at.pos++]
    value += (byte & 0x7f) * 2 ** shift
    if (byte < 0x80) return value
  }
  throw new Error('bad varint')
}

/** @param {number} masked */
export function unmask (masked) {
  const rot = (masked - 0xa282ead8) >>> 0
  return ((rot >>> 17) | (rot << 15)) >>> 0
}

const TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

/** CRC-32C (Castagnoli), as LevelDB checksums records. @param {Uint8Array} bytes */
export function crc32c (bytes) {
  let crc = 0xffffffff
  for (let i = 0; i < bytes.length; i++) crc = TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}
