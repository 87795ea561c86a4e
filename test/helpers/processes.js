import { execFileSync } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'

/** A TCP port free on loopback right now, for a process that cannot listen on port 0 and say which. */
export async function freePort () {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
  server.close()
  await once(server, 'close')
  return port
}

/**
 * Why a suite that needs `command` cannot run here, or false if it can. Under CI a missing tool is a
 * failure, not a skip: the suite then runs and fails on the missing command.
 * @param {string} command
 */
export function missing (command) {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' })
    return false
  } catch {
    return process.env.CI ? false : `${command} is not installed (CI installs it; see .ci/run)`
  }
}

/**
 * Cleanups for one test, run after it in reverse order of registration (editors, then servers,
 * then Redis), whether it passed or not, so a failed assertion cannot leave a process running.
 * @param {import('node:test').TestContext} t
 * @returns {(cleanup: () => unknown) => void}
 */
export function deferrals (t) {
  /** @type {(() => unknown)[]} */
  const cleanups = []
  t.after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup()
  })
  return cleanup => { cleanups.push(cleanup) }
}
