import { closeSync, fdatasync, fsyncSync, ftruncateSync, openSync, unlinkSync, writeSync } from 'node:fs'
import { mkdir, readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'

// The embedded store's write-ahead log, in front of LevelDB (level-doc-store.js). A record is
// written at once, synchronously, so its ACK follows its relayed copies (docs/PERFORMANCE.md, "An
// update log in front of LevelDB"); with SYNC_WRITES, records given during a sync go in one write
// after it (group commit). A record: body length and CRC-32 (4 bytes LE each), kind (1 append, 2
// delete, 3 append with history), the document id after a 2-byte length, each update after a 4-byte
// length; an append with history first holds its history (`encodeHistory`) as if it were an update.

export const LOG_DIR = 'update-log'
const HEADER = 8
export const KINDS = Object.freeze({ APPEND: 1, DELETE: 2, APPEND_WITH_HISTORY: 3 })
/** Marks an update whose author is unknown. */
const NO_AUTHOR = 0xffff

/** @typedef {{ at: number, by: (string | null)[] }} UpdatesHistory when the updates were stored, and each one's author */
/** @typedef {{ kind: number, docId: string, updates: Uint8Array[], history: UpdatesHistory | null }} LogRecord */
/**
 * @typedef {{ bytes: Uint8Array, onDurable: () => void, resolve: () => void, reject: (err: unknown) => void }} PendingRecord
 */

export class UpdateLog {
  /** @type {PendingRecord[]} records given during the sync under way, written after it */
  #pending = []
  /** the file a sync is under way on, -1 when none */
  #syncingFd = -1
  /** that file's number: the batch being synced is not handed over yet */
  #syncingFile = -1
  /** bytes of whole records in the current file: a failed write is cut back to it */
  #size = 0
  /** part of a record may lie past `#size`, not cut back yet */
  #cutShort = false
  /** @type {number[]} files of the log before the current one, not yet deleted */
  #older = []

  /** @param {string} dir @param {number} file the number of the file to write @param {{ sync: boolean }} options fdatasync each write */
  constructor (dir, file, { sync }) {
    this.dir = dir
    this.sync = sync
    this.file = file
    this.fd = openSync(fileOf(dir, file), 'a')
    if (sync) syncDir(dir)
  }

  /**
   * Resolves once durable; `onDurable` runs just before, and the owner must then move the record
   * elsewhere before the file goes (`settledFiles`). A failure rejects and cuts it from the file, so
   * nothing refused is stored, not even through a crash.
   * @param {Uint8Array} bytes one record (encodeRecord) @param {() => void} [onDurable]
   * @returns {Promise<void>}
   */
  write (bytes, onDurable = () => {}) {
    return new Promise((resolve, reject) => {
      this.#pending.push({ bytes, onDurable, resolve, reject })
      if (this.#syncingFd === -1) this.#writeBatch()
    })
  }

  #writeBatch () {
    const batch = this.#pending.splice(0)
    if (batch.length === 0) return
    const bytes = batch.length === 1 ? batch[0].bytes : Buffer.concat(batch.map(record => record.bytes))
    try {
      if (this.#cutShort) {
        ftruncateSync(this.fd, this.#size)
        this.#cutShort = false
      }
      this.#cutShort = true
      // A regular file takes the whole write or fails; the loop only guards against a short one.
      for (let written = 0; written < bytes.length;) written += writeSync(this.fd, bytes, written)
      this.#cutShort = false
    } catch (err) {
      this.#cutBack()
      for (const record of batch) record.reject(err)
      return
    }
    const start = this.#size
    this.#size += bytes.length
    if (!this.sync) {
      done(batch)
      return
    }
    const fd = this.fd
    this.#syncingFd = fd
    this.#syncingFile = this.file
    fdatasync(fd, (err) => {
      this.#syncingFd = -1
      this.#syncingFile = -1
      if (err) this.#cutFrom(fd, start)
      // Rotated away or closed while it synced (#release): closed now.
      if (fd !== this.fd) closeSync(fd)
      if (err) for (const record of batch) record.reject(err)
      else done(batch)
      if (this.#pending.length > 0) this.#writeBatch()
    })
  }

  /**
   * A batch whose sync failed (nothing follows it). If the cut fails too, the current file is cut
   * before its next write; a rotated file keeps it, and a crash would bring it back unacknowledged.
   * @param {number} fd @param {number} start
   */
  #cutFrom (fd, start) {
    if (fd === this.fd) {
      this.#size = start
      this.#cutShort = true
      this.#cutBack()
      return
    }
    try {
      ftruncateSync(fd, start)
    } catch {}
  }

  /** Back to the last whole record; if that fails too, the next write tries first. */
  #cutBack () {
    try {
      ftruncateSync(this.fd, this.#size)
      this.#cutShort = false
    } catch {}
  }

  /** Starts a new file once the current one is past `bytes`. @param {number} bytes */
  rotateIfPast (bytes) {
    if (this.#size < bytes || this.#cutShort) return
    const next = this.file + 1
    const fd = openSync(fileOf(this.dir, next), 'a')
    try {
      if (this.sync) syncDir(this.dir)
    } catch (err) {
      // The current file stays; the next move tries again, with a descriptor of its own.
      closeSync(fd)
      throw err
    }
    this.#release()
    this.#older.push(this.file)
    this.fd = fd
    this.file = next
    this.#size = 0
  }

  // Not while a sync of it is under way: closing could fail the sync, or sync a reused descriptor's
  // file and acknowledge records not on disk. The sync's callback closes it.
  #release () {
    if (this.fd !== this.#syncingFd) closeSync(this.fd)
  }

  /** Older files deletable once the owner has moved what it holds now (not one rotated away mid-sync). */
  settledFiles () {
    return this.#older.filter(file => file !== this.#syncingFile)
  }

  /** @param {number[]} files from `settledFiles` */
  deleteFiles (files) {
    for (const file of files) {
      unlinkSync(fileOf(this.dir, file))
      this.#older = this.#older.filter(older => older !== file)
    }
  }

  /** `empty`: the owner holds nothing LevelDB lacks, so the files go, unless records are in flight. @param {{ empty: boolean }} options */
  close ({ empty }) {
    this.#release()
    this.fd = -1
    if (!empty || this.#syncingFd !== -1 || this.#pending.length > 0) return
    this.deleteFiles([...this.#older])
    unlinkSync(fileOf(this.dir, this.file))
  }
}

/** Hands a durable batch over, all of it before any ACK. @param {PendingRecord[]} batch */
function done (batch) {
  for (const record of batch) record.onDurable()
  for (const record of batch) record.resolve()
}

/**
 * With `history`, an append is kept in history too (KINDS.APPEND_WITH_HISTORY).
 * @param {number} kind @param {string} docId @param {Uint8Array[]} updates @param {UpdatesHistory} [history] @returns {Buffer}
 */
export function encodeRecord (kind, docId, updates = [], history) {
  if (history) return encodeRecord(KINDS.APPEND_WITH_HISTORY, docId, [encodeHistory(history), ...updates])
  const id = Buffer.from(docId, 'utf8')
  const length = 3 + id.length + updatesLength(updates)
  const record = Buffer.allocUnsafe(HEADER + length)
  record.writeUInt32LE(length, 0)
  record[HEADER] = kind
  record.writeUInt16LE(id.length, HEADER + 1)
  id.copy(record, HEADER + 3)
  writeUpdates(record, HEADER + 3 + id.length, updates)
  record.writeUInt32LE(crc32(record.subarray(HEADER)), 4)
  return record
}

/**
 * Up to the first record that is not whole: `damage` is a whole record that is wrong, `tornBytes`
 * an incomplete last record (a write cut short). @param {Uint8Array} bytes
 */
export function readRecords (bytes) {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const records = []
  let offset = 0
  // Bounded: every turn moves `offset` forward by at least HEADER bytes, or returns.
  while (offset < buffer.length) {
    if (buffer.length - offset < HEADER) return { records, damage: null, tornBytes: buffer.length - offset }
    const end = offset + HEADER + buffer.readUInt32LE(offset)
    if (end > buffer.length) return { records, damage: null, tornBytes: buffer.length - offset }
    const body = buffer.subarray(offset + HEADER, end)
    if (crc32(body) !== buffer.readUInt32LE(offset + 4)) return { records, damage: { offset, problem: 'checksum mismatch' }, tornBytes: 0 }
    const record = decodeBody(body)
    if (!record) return { records, damage: { offset, problem: 'bad record' }, tornBytes: 0 }
    records.push(record)
    offset = end
  }
  return { records, damage: null, tornBytes: 0 }
}

/** @param {Buffer} body @returns {LogRecord | null} */
function decodeBody (body) {
  if (body.length < 3) return null
  const kind = body[0]
  const idEnd = 3 + body.readUInt16LE(1)
  const known = /** @type {number[]} */ (Object.values(KINDS)).includes(kind)
  if (!known || idEnd > body.length) return null
  const updates = readUpdates(body, idEnd)
  if (!updates || (kind === KINDS.DELETE && updates.length > 0)) return null
  const docId = body.toString('utf8', 3, idEnd)
  if (kind !== KINDS.APPEND_WITH_HISTORY) return { kind, docId, updates, history: null }
  const history = updates.length > 0 ? decodeHistory(updates[0], updates.length - 1) : null
  if (!history) return null
  return { kind: KINDS.APPEND, docId, updates: updates.slice(1), history }
}

/**
 * The time (ms, 8 bytes LE) then each update's author after a 2-byte length (NO_AUTHOR: none).
 * @param {UpdatesHistory} history @returns {Buffer}
 */
export function encodeHistory ({ at, by }) {
  const names = by.map(name => name === null ? null : Buffer.from(name, 'utf8'))
  const bytes = Buffer.allocUnsafe(8 + names.reduce((sum, name) => sum + 2 + (name?.length ?? 0), 0))
  bytes.writeDoubleLE(at, 0)
  let offset = 8
  for (const name of names) {
    offset = bytes.writeUInt16LE(name === null ? NO_AUTHOR : name.length, offset)
    if (name) offset += name.copy(bytes, offset)
  }
  return bytes
}

/** @param {Uint8Array} bytes @param {number} count updates it must name @returns {UpdatesHistory | null} */
function decodeHistory (bytes, count) {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (buffer.length < 8) return null
  const at = buffer.readDoubleLE(0)
  /** @type {(string | null)[]} */
  const by = []
  let offset = 8
  // Bounded: every turn moves `offset` forward by at least 2 bytes, or returns.
  while (offset < buffer.length) {
    if (offset + 2 > buffer.length) return null
    const length = buffer.readUInt16LE(offset)
    offset += 2
    if (length === NO_AUTHOR) {
      by.push(null)
      continue
    }
    if (offset + length > buffer.length) return null
    by.push(buffer.toString('utf8', offset, offset + length))
    offset += length
  }
  return by.length === count && Number.isFinite(at) ? { at, by } : null
}

/** The bytes `writeUpdates` takes. @param {Uint8Array[]} updates */
export function updatesLength (updates) {
  let length = 0
  for (const update of updates) length += 4 + update.byteLength
  return length
}

/** Each update after its 4-byte little-endian length. @param {Buffer} target @param {number} offset @param {Uint8Array[]} updates */
export function writeUpdates (target, offset, updates) {
  for (const update of updates) {
    target.writeUInt32LE(update.byteLength, offset)
    target.set(update, offset + 4)
    offset += 4 + update.byteLength
  }
}

/** Views of what `writeUpdates` wrote, or null when the lengths do not add up. @param {Uint8Array} bytes @param {number} offset @returns {Uint8Array[] | null} */
export function readUpdates (bytes, offset) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const updates = []
  // Bounded: every turn moves `offset` forward by at least 4 bytes, or returns.
  while (offset < bytes.byteLength) {
    if (offset + 4 > bytes.byteLength) return null
    const end = offset + 4 + view.getUint32(offset, true)
    if (end > bytes.byteLength) return null
    updates.push(bytes.subarray(offset + 4, end))
    offset = end
  }
  return updates
}

/** Oldest first; creates `dir`. @param {string} dir @returns {Promise<{ file: number, path: string, bytes: Uint8Array }[]>} */
export async function leftoverFiles (dir) {
  await mkdir(dir, { recursive: true })
  const files = (await readdir(dir))
    .filter(name => /^\d+\.log$/.test(name))
    .map(name => Number(name.slice(0, -4)))
    .sort((a, b) => a - b)
  return Promise.all(files.map(async file => ({ file, path: fileOf(dir, file), bytes: await readFile(fileOf(dir, file)) })))
}

/** @param {string} dir @param {number} file */
const fileOf = (dir, file) => join(dir, `${String(file).padStart(8, '0')}.log`)

/** A new file's name must survive a power loss as well as its contents. @param {string} dir */
function syncDir (dir) {
  const fd = openSync(dir, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}
