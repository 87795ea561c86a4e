// Run as a child process by test/update-log.test.js: an embedded store with SYNC_WRITES fills its
// update log past a file's size, then appends one more update while its fdatasync is slow (the
// real call runs at once, its answer comes 400 ms later), so the move that rotates the log runs
// meanwhile. Prints `acked` once that append is acknowledged, then waits to be killed.
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import pino from 'pino'
import { loadConfig } from '../../server/config.js'
import { openBackend } from '../../server/storage/backend.js'
import { StorageHealth } from '../../server/storage/storage-health.js'

const logger = pino({ level: 'silent' })
const config = loadConfig({ DATA_DIR: /** @type {string} */ (process.env.DATA_DIR), SYNC_WRITES: 'true' })
const { docStore } = await openBackend(config, logger, new StorageHealth(logger, { inc () {} }))

// Past the 16 MiB of a log file.
const MiB = new Uint8Array(1024 * 1024)
for (let i = 0; i < 17; i++) await docStore.append('bulk', [MiB])

const fdatasync = fs.fdatasync
const patched = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (fs))
patched.fdatasync = (/** @type {number} */ fd, /** @type {fs.NoParamCallback} */ callback) => {
  fdatasync(fd, (err) => setTimeout(() => callback(err), 400))
}
syncBuiltinESMExports()
await docStore.append('acked', [new Uint8Array([1, 2, 3])])
process.stdout.write('acked\n')
setInterval(() => {}, 1000)
