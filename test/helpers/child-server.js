import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const ENTRY = fileURLToPath(new URL('../../server/index.js', import.meta.url))

/**
 * Runs `node server/index.js` as a child process, the way users start it, and resolves once it logs
 * that it listens.
 * @param {Record<string, string>} env
 */
export async function startChildServer (env) {
  const child = spawn(process.execPath, [ENTRY], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  /** @type {any[]} */
  const logs = []
  let stderr = ''
  child.stderr.on('data', chunk => { stderr += chunk })
  const exited = once(child, 'exit').then(([code, signal]) => ({ code, signal }))
  const url = await new Promise((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', line => {
      const entry = JSON.parse(line)
      logs.push(entry)
      if (entry.msg === 'listening') resolve(entry.url)
    })
    exited.then(({ code }) => reject(new Error(`server exited (${code}) before listening: ${stderr}`)))
  })
  return {
    url: /** @type {string} */ (url),
    child,
    logs,
    exited,
    /** @param {NodeJS.Signals} signal */
    async stop (signal) {
      child.kill(signal)
      return exited
    }
  }
}
