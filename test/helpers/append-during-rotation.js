// Run as a child process by test/update-log.test.js: an embedded store with SYNC_WRITES appends one
// update, which sets the next move to LevelDB 100 ms later; then, in one write to its update log,
// 17 MiB (past a file's size) and one small update, while fdatasync is slow (the call is made 400 ms
// late, as a busy disk's thread pool would), so that move rotates the log before the sync runs on
// the file it leaves. Prints `acked` once the small update is acknowledged, then waits to be killed.
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import pino from 'pino'
import { loadConfig } from '../../server/config.js'
import { openBackend } from '../../server/storage/backend.js'
import { StorageHealth } from '../../server/storage/storage-health.js'

const logger = pino({ level: 'silent' })
const config = loadConfig({ DATA_DIR: /** @type {string} */ (process.env.DATA_DIR), SYNC_WRITES: 'true' })
const { docStore } = await openBackend(config, logger, new StorageHealth(logger, { inc () {} }))

await docStore.append('earlier', [new Uint8Array([9])])

const fdatasync = fs.fdatasync
const patched = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (fs))
patched.fdatasync = (/** @type {number} */ fd, /** @type {fs.NoParamCallback} */ callback) => {
  setTimeout(() => fdatasync(fd, callback), 400)
}
syncBuiltinESMExports()
// Past the 16 MiB of a log file, in the same turn as the update that is acknowledged: one write.
const MiB = new Uint8Array(1024 * 1024)
const bulk = Array.from({ length: 17 }, () => docStore.append('bulk', [MiB]))
await docStore.append('acked', [new Uint8Array([1, 2, 3])])
await Promise.all(bulk)
process.stdout.write('acked\n')
setInterval(() => {}, 1000)
