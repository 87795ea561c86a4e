import assert from 'node:assert/strict'
import fsPromises, { open, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { ClassicLevel } from 'classic-level'
import pino from 'pino'
import { damagedTables, logDamagedTables } from '../server/storage/level-tables.js'
import { tempDataDir } from './helpers/server.js'

// The table check runs beside LevelDB, whose compactions write and delete table files at any
// moment: it checks only the tables the current MANIFEST names, and a check that cannot be made is
// a warning, never a crash (a start after a kill -9 exited 1 on a table a compaction had deleted).

/**
 * A closed LevelDB directory holding at least two table files: each open turns the log the last
 * run left into a table.
 * @param {import('node:test').TestContext} t
 */
async function databaseWithTables (t) {
  const data = await tempDataDir()
  t.after(() => data.remove())
  for (let run = 0; run < 3; run++) {
    /** @type {ClassicLevel<string, Uint8Array>} */
    const db = new ClassicLevel(data.dir, { valueEncoding: 'view' })
    await db.open()
    for (let i = 0; i < 500; i++) await db.put(`run${run}-${i}`, new Uint8Array(100).fill(i % 256))
    await db.close()
  }
  const tables = (await readdir(data.dir)).filter(name => name.endsWith('.ldb')).sort()
  assert.ok(tables.length >= 2, `tables: ${tables}`)
  return { dir: data.dir, tables: tables.map(name => join(data.dir, name)) }
}

/**
 * Replaces readFile of node:fs/promises (the check's named import sees it) until the test ends.
 * @param {import('node:test').TestContext} t
 * @param {(original: any) => any} replacement
 */
function patchReadFile (t, replacement) {
  const original = fsPromises.readFile
  fsPromises.readFile = replacement(original)
  syncBuiltinESMExports()
  t.after(() => { fsPromises.readFile = original; syncBuiltinESMExports() })
}

/** A logger whose lines the test reads. */
function recordingLogger () {
  /** @type {any[]} */
  const lines = []
  const logger = pino({ level: 'debug' }, { write: (/** @type {string} */ line) => { lines.push(JSON.parse(line)) } })
  return { logger, lines }
}

describe('the table check', () => {
  it('skips a table a compaction deletes just before the check reads it, and checks the others', async (t) => {
    const { dir, tables } = await databaseWithTables(t)
    const [vanishing, ...kept] = tables
    // The other tables are damaged, so the check is seen to go on past the one that vanished.
    for (const table of kept) await flipFirstByte(table)
    /** @type {string[]} */
    const read = []
    patchReadFile(t, (original) => async (/** @type {any} */ path, /** @type {any} */ options) => {
      // LevelDB's compaction deleting the file between the check's listing and its read.
      if (path === vanishing) await rm(vanishing)
      read.push(String(path))
      return original(path, options)
    })
    const found = await damagedTables(dir)
    assert.ok(read.includes(vanishing), 'the check came to read the table that vanished')
    assert.deepEqual(found.map(({ file }) => file), kept)

    const { logger, lines } = recordingLogger()
    assert.equal(await logDamagedTables(dir, logger), kept.length)
    assert.equal(lines.filter(line => line.level >= 50).length, kept.length, 'one line per damaged table, none for the one that vanished')
  })

  it('does not take a table the MANIFEST does not name for a damaged one: a compaction\'s output cut short by a crash', async (t) => {
    const { dir, tables } = await databaseWithTables(t)
    const bytes = await readFile(tables[0])
    await writeFile(join(dir, '999999.ldb'), bytes.subarray(0, Math.floor(bytes.length / 2)))
    assert.deepEqual(await damagedTables(dir), [])
  })

  it('names a damaged table the MANIFEST names', async (t) => {
    const { dir, tables } = await databaseWithTables(t)
    await flipFirstByte(tables[0])
    const found = await damagedTables(dir)
    assert.deepEqual(found.map(({ file }) => file), [tables[0]])
    assert.equal(found[0].damage[0].problem, 'checksum mismatch')
  })

  it('never rejects: a check that cannot be made is a warning', async (t) => {
    const data = await tempDataDir()
    t.after(() => data.remove())
    const { logger, lines } = recordingLogger()
    assert.equal(await logDamagedTables(join(data.dir, 'missing'), logger), 0)
    assert.deepEqual(lines.map(line => [line.level, line.msg]), [[40, 'checking the table files failed']])
  })
})

/** The first byte of the first block: its checksum no longer holds. @param {string} file */
async function flipFirstByte (file) {
  const handle = await open(file, 'r+')
  try {
    const byte = Buffer.alloc(1)
    await handle.read(byte, 0, 1, 0)
    byte[0] ^= 0xff
    await handle.write(byte, 0, 1, 0)
  } finally {
    await handle.close()
  }
}
