import { execFile } from 'node:child_process'
import { open, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { tempDataDir } from './server.js'

const run = promisify(execFile)

/**
 * Why a real small filesystem cannot be mounted here, or false if it can. Mounting a tmpfs needs
 * root; under CI (which runs as root) a refusal is a failure, not a skip.
 */
export async function smallDiskUnavailable () {
  if (process.env.CI) return false
  try {
    const disk = await mountSmallDisk(1)
    await disk.remove()
    return false
  } catch (err) {
    return `cannot mount a tmpfs to fill (needs root): ${/** @type {Error} */ (err).message.split('\n')[0]}`
  }
}

/**
 * A real filesystem of `megabytes` (tmpfs), to fill and free while a server writes to it.
 * @param {number} megabytes
 */
export async function mountSmallDisk (megabytes) {
  const mount = await tempDataDir()
  try {
    await run('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m`, 'tmpfs', mount.dir])
  } catch (err) {
    await mount.remove()
    throw err
  }
  const filler = join(mount.dir, 'filler')
  return {
    dir: mount.dir,
    /** Writes a file until the filesystem has no space left. */
    async fill () {
      const file = await open(filler, 'a')
      const chunk = Buffer.alloc(64 * 1024, 1)
      try {
        // Bounded by the filesystem's size: each write takes 64 KiB until ENOSPC.
        for (let i = 0; i < (megabytes * 1024) / 64 + 16; i++) await file.write(chunk)
        throw new Error('the filesystem did not fill')
      } catch (err) {
        if (/** @type {NodeJS.ErrnoException} */ (err).code !== 'ENOSPC') throw err
      } finally {
        await file.close()
      }
    },
    /** Removes the filler: the space is back. */
    free: () => rm(filler, { force: true }),
    async remove () {
      await run('umount', ['-l', mount.dir]).catch(() => {})
      await mount.remove()
    }
  }
}
