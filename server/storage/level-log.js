// Checks LevelDB's write-ahead logs (*.log) before LevelDB reads them. LevelDB opens without its
// paranoid checks (classic-level has no option for them): a record that fails its checksum is
// dropped with the rest of its 32 KiB block, noted only in DATA_DIR/LOG, and the log is then
// deleted, so the loss is silent and permanent after one start. Reading the log here first lets the
// server refuse to start while the records are still on disk.
//
// The format (leveldb/doc/log_format.md): 32 KiB blocks of records, each a 7-byte header (masked
// CRC-32C of type and data, little-endian data length, type) and its data; fewer than 7 bytes left
// in a block are padding.

const BLOCK = 32 * 1024
const HEADER = 7

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
  const view = new DataView(log.buffer, log.byteOffset, log.byteLength)
  let records = 0
  let offset = 0
  // Bounded: every turn moves `offset` forward by at least one byte.
  while (offset < log.length) {
    const blockLeft = BLOCK - (offset % BLOCK)
    const blockEnd = Math.min(offset + blockLeft, log.length)
    if (blockLeft < HEADER) {
      offset += blockLeft
      continue
    }
    if (log.length - offset < HEADER) return { records, damage: null, tornBytes: log.length - offset }
    const length = view.getUint16(offset + 4, true)
    const type = log[offset + 6]
    // Zeroes: space a writer reserved but never filled; LevelDB skips the rest of the block.
    if (type === 0 && length === 0) {
      offset = blockEnd
      continue
    }
    if (HEADER + length > blockLeft) {
      return { records, damage: { offset, bytes: blockEnd - offset, problem: 'bad record length' }, tornBytes: 0 }
    }
    if (offset + HEADER + length > log.length) return { records, damage: null, tornBytes: log.length - offset }
    const expected = unmask(view.getUint32(offset, true))
    if (crc32c(log.subarray(offset + 6, offset + HEADER + length)) !== expected) {
      return { records, damage: { offset, bytes: blockEnd - offset, problem: 'checksum mismatch' }, tornBytes: 0 }
    }
    records++
    offset += HEADER + length
  }
  return { records, damage: null, tornBytes: 0 }
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
