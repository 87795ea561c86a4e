import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { atEnd } from './at-end.js'

const ENTRY = fileURLToPath(new URL('../../server/index.js', import.meta.url))

/** @type {Set<import('node:child_process').ChildProcess>} servers still running */
const running = new Set()
// A test that fails before stopping its server would leave it running, and the file would never
// finish (the child's pipes keep this process alive): whatever still runs is killed at its end.
atEnd(() => { for (const child of running) child.kill('SIGKILL') })

/**
 * Runs `node server/index.js` as a child process, the way users start it: its JSON log lines
 * parsed as they come (`lines` emits each), its stderr kept.
 * @param {Record<string, string>} env
 */
export function spawnServer (env) {
  const child = spawn(process.execPath, [ENTRY], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  running.add(child)
  child.once('exit', () => running.delete(child))
  /** @type {any[]} */
  const logs = []
  const output = { stderr: '' }
  child.stderr.on('data', chunk => { output.stderr += chunk })
  const lines = createInterface({ input: child.stdout })
  lines.on('line', line => logs.push(JSON.parse(line)))
  return { child, logs, output, lines }
}

/**
 * Runs the server as users do and resolves once it logs that it listens.
 * @param {Record<string, string>} env
 */
export async function startChildServer (env) {
  const { child, logs, output, lines } = spawnServer(env)
  const exited = once(child, 'exit').then(([code, signal]) => ({ code, signal }))
  const url = await new Promise((resolve, reject) => {
    lines.on('line', () => {
      const entry = logs[logs.length - 1]
      if (entry.msg === 'listening') resolve(entry.url)
    })
    exited.then(({ code }) => reject(new Error(`server exited (${code}) before listening: ${output.stderr}`)))
  })
  return {
    url: /** @type {string} */ (url),
    child,
    logs,
    output,
    exited,
    /** @param {NodeJS.Signals} signal */
    async stop (signal) {
      child.kill(signal)
      return exited
    }
  }
}
