import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { logRecords, readVarint } from './level-log.js'

// Which table files make up the database: those its current MANIFEST names (the directory also holds
// a compaction's outputs and inputs while it runs). Format (leveldb/db/version_edit.cc): a log of
// version edits, each a list of varint-tagged fields, among them tables removed (6) and added (7).
const COMPARATOR = 1
const LOG_NUMBER = 2
const NEXT_FILE_NUMBER = 3
const LAST_SEQUENCE = 4
const COMPACT_POINTER = 5
const DELETED_FILE = 6
const NEW_FILE = 7
const PREV_LOG_NUMBER = 9

/**
 * The table numbers the current MANIFEST names, ascending, read up to its last whole edit.
 * @param {string} dataDir
 */
export async function tablesInManifest (dataDir) {
  const current = await readFile(join(dataDir, 'CURRENT'), 'utf8')
  const manifest = await readFile(join(dataDir, current.trim()))
  /** @type {Map<string, number>} by level and number: a move to the next level removes and adds it */
  const tables = new Map()
  for (const record of logRecords(manifest)) {
    const edit = readEdit(record)
    if (!edit) break
    for (const key of edit.deleted) tables.delete(key)
    for (const [key, number] of edit.added) tables.set(key, number)
  }
  return [...new Set(tables.values())].sort((a, b) => a - b)
}

/**
 * @param {Uint8Array} edit
 * @returns {{ deleted: string[], added: [string, number][] } | null} tables keyed `level:number`; null when not an edit
 */
function readEdit (edit) {
  const at = { pos: 0 }
  const deleted = []
  /** @type {[string, number][]} */
  const added = []
  const skipSlice = () => {
    const length = readVarint(edit, at)
    at.pos += length
  }
  try {
    // Bounded: every field moves `at.pos` forward past its tag.
    while (at.pos < edit.length) {
      const tag = readVarint(edit, at)
      if (tag === COMPARATOR) {
        skipSlice()
      } else if (tag === LOG_NUMBER || tag === NEXT_FILE_NUMBER || tag === LAST_SEQUENCE || tag === PREV_LOG_NUMBER) {
        readVarint(edit, at)
      } else if (tag === COMPACT_POINTER) {
        readVarint(edit, at)
        skipSlice()
      } else if (tag === DELETED_FILE) {
        deleted.push(`${readVarint(edit, at)}:${readVarint(edit, at)}`)
      } else if (tag === NEW_FILE) {
        const level = readVarint(edit, at)
        const number = readVarint(edit, at)
        readVarint(edit, at) // size
        skipSlice() // smallest key
        skipSlice() // largest key
        added.push([`${level}:${number}`, number])
      } else {
        return null
      }
    }
  } catch {
    return null
  }
  return at.pos === edit.length ? { deleted, added } : null
}
