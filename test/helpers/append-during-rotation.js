// Run as a child process by test/update-log.test.js: an embedded store with SYNC_WRITES appends one
// update; then, while fdatasync is slow (the call is made 400 ms late, as a busy disk's thread pool
// would), 1 MiB, whose write is synced, and meanwhile 16 MiB more and one small update, which wait
// for that sync and then go to the update log in one write (past a file's size). That write sets
// the next move to LevelDB 100 ms later, which rotates the log before the write's sync runs on the
// file it leaves. Prints `acked` once the small update is acknowledged, then waits to be killed.
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
// Past the 16 MiB of a log file, in one write with the update that is acknowledged.
const MiB = new Uint8Array(1024 * 1024)
const bulk = Array.from({ length: 17 }, () => docStore.append('bulk', [MiB]))
await docStore.append('acked', [new Uint8Array([1, 2, 3])])
await Promise.all(bulk)
process.stdout.write('acked\n')
setInterval(() => {}, 1000)
