import { mkdir } from 'node:fs/promises'
import { ClassicLevel } from 'classic-level'

/**
 * Opens the embedded LevelDB database that backs sessions and documents when no Redis is configured.
 * LevelDB holds a lock on the directory: one process per data dir.
 * @param {string} dataDir
 */
export async function openLevel (dataDir) {
  await mkdir(dataDir, { recursive: true })
  /** @type {ClassicLevel<string, Uint8Array>} */
  const db = new ClassicLevel(dataDir, { keyEncoding: 'utf8', valueEncoding: 'view' })
  await db.open()
  return db
}
