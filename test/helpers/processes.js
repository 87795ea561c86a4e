import { execFileSync } from 'node:child_process'
export { freePort } from '../../loadtest/spawn.js'

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
 * Resolves when `check` resolves truthy, polling every `intervalMs`, or rejects after `timeoutMs`.
 * @param {() => Promise<unknown>} check
 * @param {{ timeoutMs?: number, intervalMs?: number, what?: string }} [options]
 */
export async function eventually (check, { timeoutMs = 10000, intervalMs = 50, what = 'condition' } = {}) {
  const deadline = Date.now() + timeoutMs
  let lastError
  while (Date.now() < deadline) {
    try {
      if (await check()) return
    } catch (err) {
      lastError = err
    }
    await new Promise(resolve => setTimeout(resolve, intervalMs))
  }
  throw new Error(`${what} not met within ${timeoutMs} ms${lastError ? `: ${lastError}` : ''}`)
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
