import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { crc32c, readVarint, unmask } from './level-log.js'
import { tablesInManifest } from './level-manifest.js'

// Checks a LevelDB table's block checksums, which LevelDB reads unverified (classic-level hides
// `verify_checksums`): a flipped byte reads as a missing or different key. This names the file and
// the damaged block's keys. Format (leveldb/doc/table_format.md): blocks, each followed by a type
// byte and a masked CRC-32C; a 48-byte footer points at the index block of data blocks' last keys.
const FOOTER = 48
const TRAILER = 5
const MAGIC_LOW = 0x8b80fb57
const MAGIC_HIGH = 0xdb477524

/**
 * @typedef {object} TableDamage
 * @property {number} offset where the damaged block starts
 * @property {string} problem
 * @property {string} [after] the damaged block holds keys after this one (absent: from the first)
 * @property {string} [upTo] and up to this one (absent: to the last)
 */

/**
 * The tables the current MANIFEST names that fail their checks, with up to 10 damaged blocks each
 * (other files in the directory are no part of the database). @param {string} dataDir
 */
export async function damagedTables (dataDir) {
  const found = []
  for (const number of await tablesInManifest(dataDir)) {
    const table = await readTable(dataDir, number)
    // Deleted by a compaction since the MANIFEST was read: no longer part of the database.
    if (!table) continue
    const { blocks, damage } = checkTable(table.bytes)
    if (damage.length > 0) found.push({ file: table.file, blocks, damage: damage.slice(0, 10) })
  }
  return found
}

/**
 * Logs each damaged table; resolves with how many. Never rejects: a check that cannot be made is a
 * warning, never a reason to stop a start. @param {string} dataDir @param {import('pino').Logger} logger
 */
export async function logDamagedTables (dataDir, logger) {
  try {
    const found = await damagedTables(dataDir)
    for (const { file, blocks, damage } of found) {
      logger.error({ file, blocks, damage }, 'a table file is damaged: reads of the keys in its damaged blocks fail or miss; restore DATA_DIR from a backup')
    }
    return found.length
  } catch (err) {
    logger.warn({ err: err instanceof Error ? err.message : String(err), dataDir }, 'checking the table files failed')
    return 0
  }
}

/** Null when gone; tables were once named *.sst. @param {string} dataDir @param {number} number */
async function readTable (dataDir, number) {
  for (const extension of ['ldb', 'sst']) {
    const file = join(dataDir, `${String(number).padStart(6, '0')}.${extension}`)
    try {
      return { file, bytes: await readFile(file) }
    } catch (err) {
      if (/** @type {NodeJS.ErrnoException} */ (err).code !== 'ENOENT') throw err
    }
  }
  return null
}

/** @param {Uint8Array} table the content of one *.ldb file @returns {{ blocks: number, damage: TableDamage[] }} */
export function checkTable (table) {
  const view = new DataView(table.buffer, table.byteOffset, table.byteLength)
  if (table.length < FOOTER || view.getUint32(table.length - 8, true) !== MAGIC_LOW || view.getUint32(table.length - 4, true) !== MAGIC_HIGH) {
    return { blocks: 0, damage: [{ offset: Math.max(0, table.length - FOOTER), problem: 'no table footer' }] }
  }
  const footer = { pos: table.length - FOOTER }
  const index = { offset: 0, size: 0 }
  let indexBlock
  try {
    readVarint(table, footer) // metaindex offset
    readVarint(table, footer) // metaindex size
    index.offset = readVarint(table, footer)
    index.size = readVarint(table, footer)
    indexBlock = blockAt(table, index)
  } catch (err) {
    indexBlock = /** @type {Error} */ (err).message
  }
  if (typeof indexBlock === 'string') return { blocks: 0, damage: [{ offset: index.offset, problem: `index block: ${indexBlock}` }] }

  const damage = []
  let blocks = 0
  /** @type {string | undefined} */
  let previousKey
  try {
    for (const { key, handle } of entries(indexBlock)) {
      blocks++
      const block = blockAt(table, handle)
      if (typeof block === 'string') damage.push({ offset: handle.offset, problem: block, after: previousKey, upTo: key })
      previousKey = key
    }
  } catch (err) {
    damage.push({ offset: index.offset, problem: `index block: ${/** @type {Error} */ (err).message}` })
  }
  return { blocks, damage }
}

/**
 * @param {Uint8Array} table @param {{ offset: number, size: number }} handle
 * @returns {Uint8Array | string} the contents, or why they cannot be trusted
 */
function blockAt (table, { offset, size }) {
  if (offset + size + TRAILER > table.length) return 'block past the end of the file'
  const view = new DataView(table.buffer, table.byteOffset, table.byteLength)
  const withType = table.subarray(offset, offset + size + 1)
  if (crc32c(withType) !== unmask(view.getUint32(offset + size + 1, true))) return 'checksum mismatch'
  const contents = table.subarray(offset, offset + size)
  const type = table[offset + size]
  if (type === 0) return contents
  if (type === 1) return unsnappy(contents)
  return `unknown block type ${type}`
}

/**
 * Prefix-compressed internal keys (user key + 8 bytes of sequence and type) and, in an index block,
 * data block handles. @param {Uint8Array} block
 */
function * entries (block) {
  const view = new DataView(block.buffer, block.byteOffset, block.byteLength)
  const restarts = view.getUint32(block.length - 4, true)
  const end = block.length - 4 - 4 * restarts
  const at = { pos: 0 }
  let key = new Uint8Array(0)
  // Bounded: every entry moves `at.pos` forward past its header.
  while (at.pos < end) {
    const shared = readVarint(block, at)
    const unshared = readVarint(block, at)
    const valueLength = readVarint(block, at)
    const next = new Uint8Array(shared + unshared)
    next.set(key.subarray(0, shared))
    next.set(block.subarray(at.pos, at.pos + unshared), shared)
    key = next
    at.pos += unshared
    const value = { pos: at.pos }
    const handle = { offset: readVarint(block, value), size: readVarint(block, value) }
    at.pos += valueLength
    yield { key: Buffer.from(key.subarray(0, Math.max(0, key.length - 8))).toString('utf8'), handle }
  }
}

/** Snappy's block format, as LevelDB compresses table blocks. @param {Uint8Array} src */
function unsnappy (src) {
  const at = { pos: 0 }
  const out = new Uint8Array(readVarint(src, at))
  let o = 0
  // Bounded: every element consumes at least one byte of `src`.
  while (at.pos < src.length) {
    const tag = src[at.pos++]
    if ((tag & 3) === 0) {
      let length = tag >>> 2
      if (length >= 60) {
        const bytes = length - 59
        length = 0
        for (let i = 0; i < bytes; i++) length += src[at.pos++] * 2 ** (8 * i)
      }
      length += 1
      out.set(src.subarray(at.pos, at.pos + length), o)
      at.pos += length
      o += length
      continue
    }
    let length, distance
    if ((tag & 3) === 1) {
      length = ((tag >>> 2) & 7) + 4
      distance = ((tag >>> 5) << 8) | src[at.pos++]
    } else if ((tag & 3) === 2) {
      length = (tag >>> 2) + 1
      distance = src[at.pos] | (src[at.pos + 1] << 8)
      at.pos += 2
    } else {
      length = (tag >>> 2) + 1
      distance = (src[at.pos] | (src[at.pos + 1] << 8) | (src[at.pos + 2] << 16) | (src[at.pos + 3] << 24)) >>> 0
      at.pos += 4
    }
    if (distance === 0 || distance > o) throw new Error('bad snappy copy')
    for (let i = 0; i < length; i++, o++) out[o] = out[o - distance]
  }
  return out
}
