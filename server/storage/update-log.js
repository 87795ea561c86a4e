import { closeSync, fdatasync, fsyncSync, ftruncateSync, openSync, unlinkSync, writeSync } from 'node:fs'
import { mkdir, readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'

// The embedded store's own write-ahead log: what makes an update durable, so that it can be
// acknowledged, before it reaches LevelDB (level-doc-store.js moves it there in the background, many
// updates per LevelDB write). A record goes to the log the moment it is given, in one synchronous
// write on the main thread, where a LevelDB batch costs a hop to the thread pool and a write per
// update; its ACK can then follow its relayed copies in the same burst of sends. With SYNC_WRITES
// each write is fdatasynced, and the records given meanwhile wait for that sync, then go in one
// write (group commit). A record is its owner's, and acknowledged, once durable; one whose write or
// sync fails is cut from the file: an append is refused and never stored, or stored and
// acknowledged. Files of the log (`DATA_DIR/update-log/<n>.log`) are
// deleted once everything in them is in LevelDB; at start, whatever a crash left in them goes to
// LevelDB before the server serves anything.
//
// A record: its body's length and the body's CRC-32 (4 bytes each, little-endian), then the body:
// its kind (1 = updates appended to a document, 2 = a document deleted), the document id after a
// 2-byte length, and for appends each update after a 4-byte length.

export const LOG_DIR = 'update-log'
const HEADER = 8
export const KINDS = Object.freeze({ APPEND: 1, DELETE: 2 })

/**
 * @typedef {{ kind: number, docId: string, updates: Uint8Array[] }} LogRecord
 * @typedef {{ bytes: Uint8Array, onDurable: () => void, resolve: () => void, reject: (err: unknown) => void }} Waiting
 */

export class UpdateLog {
  /** @type {Waiting[]} records waiting for the sync under way to end */
  #waiting = []
  /** the file a sync is under way on, -1 when none */
  #syncingFd = -1
  /** the number of that file: the records of the batch being synced are not handed over yet */
  #syncingFile = -1
  /** bytes of whole records in the current file: a failed write is cut back to it */
  #size = 0
  /** a failed write may have left part of a record past `#size` that is not cut back yet */
  #cutShort = false
  /** @type {number[]} files of the log before the current one, not yet deleted */
  #older = []

  /**
   * @param {string} dir
   * @param {number} file the number of the file to write
   * @param {{ sync: boolean }} options `sync`: fdatasync each write before it counts as done
   */
  constructor (dir, file, { sync }) {
    this.dir = dir
    this.sync = sync
    this.file = file
    this.fd = openSync(fileOf(dir, file), 'a')
    if (sync) syncDir(dir)
  }

  /**
   * Writes a record at once, or after the sync under way with the others that waited for it; the
   * promise resolves once it is durable (synced, with `sync`). `onDurable` runs then, just before:
   * from then on the owner holds the record, and must move it elsewhere before the file goes
   * (`settledFiles`). A failed write or sync rejects, and the record is cut from the file, so that
   * what was refused never reaches storage, not even through a crash and the next start.
   * @param {Uint8Array} bytes one record (encodeRecord)
   * @param {() => void} [onDurable]
   * @returns {Promise<void>}
   */
  write (bytes, onDurable = () => {}) {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ bytes, onDurable, resolve, reject })
      if (this.#syncingFd === -1) this.#flush()
    })
  }

  #flush () {
    const batch = this.#waiting.splice(0)
    if (batch.length === 0) return
    const bytes = batch.length === 1 ? batch[0].bytes : Buffer.concat(batch.map(waiting => waiting.bytes))
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
      for (const waiting of batch) waiting.reject(err)
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
      // Rotated away or closed while it synced (see #release): closed now that the sync has answered.
      if (fd !== this.fd) closeSync(fd)
      if (err) for (const waiting of batch) waiting.reject(err)
      else done(batch)
      if (this.#waiting.length > 0) this.#flush()
    })
  }

  /**
   * Cuts a batch whose sync failed from its file (nothing was written after it: the next batch waits
   * for the sync). Should that fail too, the current file is cut before its next write; a file
   * rotated away keeps the batch, which a crash before its deletion would bring back unacknowledged.
   * @param {number} fd
   * @param {number} start
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

  /** Cuts a failed write back to the last whole record; if that fails too, the next write tries first. */
  #cutBack () {
    try {
      ftruncateSync(this.fd, this.#size)
      this.#cutShort = false
    } catch {}
  }

  /**
   * Starts a new file once the current one has grown past `bytes`. The files before it can be deleted
   * once every record they hold is elsewhere (`settledFiles`).
   * @param {number} bytes
   */
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

  /**
   * Closes the current file, unless a sync of it is under way: closing it then could fail that sync,
   * or, were its number reused by a file opened meanwhile, sync the wrong file and acknowledge
   * records that are not on disk. The sync's callback closes it instead.
   */
  #release () {
    if (this.fd !== this.#syncingFd) closeSync(this.fd)
  }

  /**
   * The files before the current one whose every record the owner holds now (one rotated away during
   * its sync holds a batch that is handed over only when the sync answers): once the owner has moved
   * everything it holds now elsewhere, they can be deleted.
   */
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

  /**
   * Closes the file; with `empty` (the owner holds nothing the database lacks), deletes it and the
   * older ones, unless records are still being written or synced.
   * @param {{ empty: boolean }} options
   */
  close ({ empty }) {
    this.#release()
    this.fd = -1
    if (!empty || this.#syncingFd !== -1 || this.#waiting.length > 0) return
    this.deleteFiles([...this.#older])
    unlinkSync(fileOf(this.dir, this.file))
  }
}

/** Hands a durable batch over, all of it before any ACK. @param {Waiting[]} batch */
function done (batch) {
  for (const waiting of batch) waiting.onDurable()
  for (const waiting of batch) waiting.resolve()
}

/**
 * @param {number} kind
 * @param {string} docId
 * @param {Uint8Array[]} updates
 * @returns {Buffer}
 */
export function encodeRecord (kind, docId, updates = []) {
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
 * The records of one file of the log, up to the first that is not whole.
 * @param {Uint8Array} bytes
 * @returns {{ records: LogRecord[], damage: { offset: number, problem: string } | null, tornBytes: number }}
 *   `damage`: a record that is all there but wrong (its checksum, its kind or its framing);
 *   `tornBytes`: an incomplete last record, as a write cut short leaves it
 */
export function readRecords (bytes) {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  /** @type {LogRecord[]} */
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
  if ((kind !== KINDS.APPEND && kind !== KINDS.DELETE) || idEnd > body.length) return null
  const updates = readUpdates(body, idEnd)
  if (!updates || (kind === KINDS.DELETE && updates.length > 0)) return null
  return { kind, docId: body.toString('utf8', 3, idEnd), updates }
}

/** The bytes `writeUpdates` takes. @param {Uint8Array[]} updates */
export function updatesLength (updates) {
  let length = 0
  for (const update of updates) length += 4 + update.byteLength
  return length
}

/**
 * Writes each update after its length (4 bytes, little-endian), from `offset` on.
 * @param {Buffer} target
 * @param {number} offset
 * @param {Uint8Array[]} updates
 */
export function writeUpdates (target, offset, updates) {
  for (const update of updates) {
    target.writeUInt32LE(update.byteLength, offset)
    target.set(update, offset + 4)
    offset += 4 + update.byteLength
  }
}

/**
 * What `writeUpdates` wrote from `offset` to the end of `bytes` (views into it), or null when the
 * lengths do not add up to it.
 * @param {Uint8Array} bytes
 * @param {number} offset
 * @returns {Uint8Array[] | null}
 */
export function readUpdates (bytes, offset) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  /** @type {Uint8Array[]} */
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

/**
 * The files a previous run left in `dir`, oldest first, each with its bytes; creates `dir`.
 * @param {string} dir
 * @returns {Promise<{ file: number, path: string, bytes: Uint8Array }[]>}
 */
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
