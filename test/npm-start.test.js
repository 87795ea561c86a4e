import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { describe, it } from 'node:test'
import { NODE_OPTIONS } from '../server/node-options.js'
import { atEnd } from './helpers/at-end.js'
import { freePort } from './helpers/processes.js'
import { tempDataDir } from './helpers/server.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))

// `npm start`, the README's first command, for real: npm, its prestart (the page's bundle, built if
// missing) and the server it starts, which must run with Tandem's Node.js options.

describe('npm start', () => {
  it('starts a server that answers, on this Node.js, with the server\'s Node.js options', async (t) => {
    const data = await tempDataDir()
    t.after(() => data.remove())
    const port = await freePort()
    // Its own process group: npm runs the server under a shell, and the group stops all three.
    const npm = spawn('npm', ['start'], {
      cwd: ROOT,
      detached: true,
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: data.dir, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    const exited = once(npm, 'exit')
    const stopGroup = () => { try { process.kill(-(/** @type {number} */ (npm.pid)), 'SIGINT') } catch {} }
    atEnd(stopGroup)
    let stderr = ''
    npm.stderr.on('data', chunk => { stderr += chunk })

    // npm prints its own lines before the server's JSON ones.
    const listening = await new Promise((resolve, reject) => {
      createInterface({ input: npm.stdout }).on('line', line => {
        if (!line.startsWith('{')) return
        const entry = JSON.parse(line)
        if (entry.msg === 'listening') resolve(entry)
      })
      exited.then(([code]) => reject(new Error(`npm start exited (${code}) before the server listened: ${stderr}`)))
    })

    assert.equal(listening.url, `http://127.0.0.1:${port}`)
    assert.equal(listening.node, process.version, 'npm start runs the server on the Node.js first on PATH')
    assert.deepEqual(listening.nodeOptions, NODE_OPTIONS)
    const health = await fetch(`${listening.url}/api/health`)
    assert.equal(health.status, 200)
    assert.equal((await health.json()).ready, true)

    stopGroup()
    await exited
  })
})
