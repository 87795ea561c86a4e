import { ClassicLevel } from 'classic-level'
import { StartError } from '../exit-codes.js'
import { clearStopped, inspectDataDir, markStopped } from './level-dir.js'
import { logDamagedTables } from './level-tables.js'

/**
 * One process per DATA_DIR (LevelDB locks it); an existing database opens with `createIfMissing:
 * false`, so damage never becomes an empty store over the old files. Rejects with a StartError.
 * @param {string} dataDir @param {import('pino').Logger} logger
 */
export async function openLevel (dataDir, logger) {
  const { exists } = await inspectDataDir(dataDir, logger)
  /** @type {ClassicLevel<string, Uint8Array>} */
  const db = new ClassicLevel(dataDir, { keyEncoding: 'utf8', valueEncoding: 'view', createIfMissing: !exists })
  try {
    await db.open()
    await clearStopped(dataDir)
  } catch (err) {
    await db.close().catch(() => {})
    throw startErrorOf(dataDir, err)
  }
  // LevelDB reads tables without checking checksums: a damaged block could read as a missing session.
  if (exists) await logDamagedTables(dataDir, logger)
  return db
}

/** See level-dir.js; a failure only costs that check. @param {string} dataDir @param {import('pino').Logger} logger */
export function closedCleanly (dataDir, logger) {
  return markStopped(dataDir).catch(err => logger.warn({ err: err.message, dataDir }, 'could not record a clean stop'))
}

/** @param {string} dataDir @param {unknown} err LevelDB's open error; its cause holds LevelDB's status */
function startErrorOf (dataDir, err) {
  if (err instanceof StartError) return err
  const cause = /** @type {{ code?: string, message?: string }} */ (/** @type {{ cause?: unknown } | null | undefined} */ (err)?.cause ?? err)
  const message = cause?.message ?? String(err)
  const details = { dataDir, cause: message }
  if (cause?.code === 'LEVEL_LOCKED') {
    return new StartError('STORAGE_LOCKED', `DATA_DIR ${dataDir} is locked by another process (a server already running on it): stop that one, or give this one another DATA_DIR`, details)
  }
  if (/No space left on device/.test(message)) {
    return new StartError('STORAGE_FULL', `DATA_DIR ${dataDir} is on a full filesystem: free space, then start again`, details)
  }
  if (/Read-only file system|Permission denied/.test(message)) {
    return new StartError('DATA_DIR_UNUSABLE', `DATA_DIR ${dataDir} is not writable: make it a writable directory`, details)
  }
  if (cause?.code === 'LEVEL_CORRUPTION' || /Corruption|does not exist|No such file/.test(message)) {
    return new StartError('STORAGE_CORRUPT', `the database in DATA_DIR ${dataDir} is damaged or incomplete (${message}): restore DATA_DIR from a backup`, details)
  }
  return new StartError('STORAGE_FAILED', `the database in DATA_DIR ${dataDir} failed to open (${message})`, details)
}
