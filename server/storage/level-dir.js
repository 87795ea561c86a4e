import { constants } from 'node:fs'
import { access, mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { StartError } from '../exit-codes.js'
import { checkLog } from './level-log.js'

// LevelDB repairs quietly what it can: without CURRENT it creates an empty database beside the old
// files, and it drops a damaged log record and deletes the log. Both are refused here, while the
// files are still as they were, with how to repair them.

/** Written by a clean stop, removed once the next start has opened the database. */
export const STOPPED_FILE = 'TANDEM-STOPPED'

const LEVEL_FILE = /^(CURRENT|MANIFEST-\d+|\d+\.(log|ldb|sst))$/

/**
 * Checks that DATA_DIR can hold a database and that the one it holds is whole; `exists`: it holds one.
 * @param {string} dataDir @param {import('pino').Logger} logger
 */
export async function inspectDataDir (dataDir, logger) {
  const stats = await stat(dataDir).catch(err => {
    if (err.code === 'ENOENT') return null
    throw unusable(dataDir, err)
  })
  if (stats && !stats.isDirectory()) {
    throw new StartError('DATA_DIR_UNUSABLE', `DATA_DIR ${dataDir} is not a directory: point DATA_DIR at a directory (it is created if missing)`, { dataDir })
  }
  if (!stats) await mkdir(dataDir, { recursive: true }).catch(err => { throw unusable(dataDir, err) })
  await access(dataDir, constants.W_OK).catch(err => { throw unusable(dataDir, err) })

  const names = await readdir(dataDir)
  if (!names.some(name => LEVEL_FILE.test(name))) return { exists: false }

  if (!names.includes('CURRENT')) {
    throw corrupt(dataDir, 'CURRENT', 'CURRENT is missing beside the database\'s other files: restore DATA_DIR from a backup, ' +
      'or write the name of the newest MANIFEST-* file and a newline into CURRENT')
  }
  const current = await readFile(join(dataDir, 'CURRENT'), 'utf8')
  if (!/^MANIFEST-\d+\n$/.test(current) || !names.includes(current.trim())) {
    throw corrupt(dataDir, 'CURRENT', `CURRENT does not name a MANIFEST file of the directory (it holds ${JSON.stringify(current.slice(0, 40))}): ` +
      'restore DATA_DIR from a backup, or write the name of the newest MANIFEST-* file and a newline into CURRENT')
  }

  const stopped = names.includes(STOPPED_FILE)
  for (const name of names.filter(name => name.endsWith('.log') && LEVEL_FILE.test(name))) {
    const { records, damage, tornBytes } = checkLog(await readFile(join(dataDir, name)))
    if (damage) {
      throw corrupt(dataDir, name, `the write-ahead log ${name} is damaged (${damage.problem} at byte ${damage.offset}); ` +
        `opening it would silently drop ${damage.bytes} bytes of records: restore DATA_DIR from a backup, or to keep only the ` +
        `${records} records before the damage, stop every server on DATA_DIR and run: truncate -s ${damage.offset} ${join(dataDir, name)}`,
      { offset: damage.offset, droppedBytes: damage.bytes, records })
    }
    if (tornBytes === 0) continue
    // An incomplete last record is a write cut short (possibly acknowledged, all that is left of it), or,
    // after a clean stop, damage since.
    if (stopped) {
      throw corrupt(dataDir, name, `the write-ahead log ${name} ends in an incomplete record (${tornBytes} bytes) although the ` +
        'server stopped cleanly: it was truncated since. Restore DATA_DIR from a backup, or to start without that record, ' +
        `delete ${join(dataDir, STOPPED_FILE)}`, { droppedBytes: tornBytes, records })
    }
    logger.warn({ dataDir, file: name, droppedRecords: 1, droppedBytes: tornBytes, records },
      `the write-ahead log ends in an incomplete record: 1 record (${tornBytes} bytes), possibly acknowledged, is dropped`)
  }
  return { exists: true }
}

/** So a log found cut short at the next start is known to be damage. @param {string} dataDir */
export function markStopped (dataDir) {
  return writeFile(join(dataDir, STOPPED_FILE), `${new Date().toISOString()}\n`)
}

/** @param {string} dataDir */
export function clearStopped (dataDir) {
  return rm(join(dataDir, STOPPED_FILE), { force: true })
}

/** @param {string} dataDir @param {string} file @param {string} message @param {Record<string, unknown>} [details] */
function corrupt (dataDir, file, message, details = {}) {
  return new StartError('STORAGE_CORRUPT', message, { dataDir, file, ...details })
}

/** @param {string} dataDir @param {NodeJS.ErrnoException} err */
function unusable (dataDir, err) {
  if (err.code === 'ENOSPC') return new StartError('STORAGE_FULL', `DATA_DIR ${dataDir} is on a full filesystem: free space, then start again`, { dataDir, cause: err.message })
  return new StartError('DATA_DIR_UNUSABLE', `DATA_DIR ${dataDir} cannot be used (${err.code}): make it a writable directory`, { dataDir, cause: err.message })
}
