// Checks LevelDB's write-ahead logs (*.log) before LevelDB reads them. LevelDB opens without its
// paranoid checks (classic-level has no option for them): a record that fails its checksum is
// dropped with the rest of its 32 KiB block, noted only in DATA_DIR/LOG, and the log is then
// deleted, so the loss is silent and permanent after one start. Reading the log here first lets the
// server refuse to start while the records are still on disk. A MANIFEST has the same format.
//
// The format (leveldb/doc/log_format.md): 32 KiB blocks of records, each a 7-byte header (masked
// CRC-32C of type and data, little-endian data length, type) and its data; fewer than 7 bytes left
// in a block are padding.

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
 * @property {LogDamage | null} damage a bad record before the end of the log: LevelDB would drop
 *   it and the rest of its block, records that were written after it and later acknowledged
 * @property {number} tornBytes bytes of an incomplete last record, as a write cut short leaves
 *   (a full disk, a machine that lost power, or a file truncated after the fact)
 */

/**
 * @param {Uint8Array} log the content of one *.log file
 * @returns {LogCheck}
 */
export function checkLog (log) {
  let records = 0
  const walk = fragments(log)
  // Bounded: `fragments` ends at the end of the log.
  for (let next = walk.next(); ; next = walk.next()) {
    if (next.done) return { records, ...next.value }
    records++
  }
}

/**
 * The whole records of a log (a MANIFEST is one too), their fragments joined, up to the first that
 * is damaged or cut short.
 * @param {Uint8Array} log
 * @returns {Generator<Uint8Array>}
 */
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
 * The physical records of a log, each a whole record or a fragment of one; returns what ends them.
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

/**
 * A varint as LevelDB writes them (7 bits a byte, least significant first), read at `at.pos`.
 * @param {Uint8Array} bytes
 * @param {{ pos: number }} at moved past it
 */
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
