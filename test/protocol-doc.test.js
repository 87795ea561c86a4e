import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { createServer as createHttpServer } from 'node:http'
import { Writable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import pino from 'pino'
import { Server } from 'socket.io'
import { io } from 'socket.io-client'
import * as Y from 'yjs'
import { SocketIOProvider } from '../client/src/provider.js'
import { createServer } from '../server/app.js'
import { loadConfig } from '../server/config.js'
import { eventually } from './helpers/eventually.js'
import { contentOf, createSession, tempDataDir } from './helpers/server.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const protocolDoc = await readFile(new URL('../docs/PROTOCOL.md', import.meta.url), 'utf8')

/** The first ```js block after `heading` in docs/PROTOCOL.md. @param {string} heading */
function codeBlockAfter (heading) {
  const rest = protocolDoc.slice(protocolDoc.indexOf(heading))
  const match = /```js\n([\s\S]*?)```/.exec(rest)
  assert.ok(match, `no js block after ${heading}`)
  return match[1]
}

describe('docs/PROTOCOL.md and refused connections, against a real server', () => {
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let data
  /** @type {Awaited<ReturnType<typeof createServer>>} */
  let server
  /** @type {string} */
  let url
  /** @type {any[]} */
  const logs = []

  before(async () => {
    data = await tempDataDir()
    const config = loadConfig({}, { port: 0, host: '127.0.0.1', dataDir: data.dir, logLevel: 'info' })
    const logger = pino({ level: 'info' }, new Writable({ write (chunk, encoding, done) { logs.push(JSON.parse(String(chunk))); done() } }))
    server = await createServer(config, { logger })
    ;({ url } = await server.listen())
  })
  after(async () => {
    await server.close()
    await data.remove()
  })

  const refusals = () => logs.filter(entry => entry.msg === 'connection refused')

  it('runs the client example of the sync sequence as written, and the server stores its edit', async () => {
    const { id } = await createSession(url)
    // Saved where the example says: at the root of the checkout, so its ./server/ imports resolve.
    const file = `${ROOT}protocol-example-${randomBytes(4).toString('hex')}.mjs`
    await writeFile(file, codeBlockAfter('## Sync sequence'))
    const child = spawn(process.execPath, [file, url, id], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', chunk => { stdout += chunk })
    child.stderr.on('data', chunk => { stderr += chunk })
    try {
      await eventually(() => /stored: hello/.test(stdout), { timeoutMs: 15000, what: `the example storing its edit (stderr: ${stderr})` })
      assert.equal(await contentOf(url, id), 'hello')
      assert.equal(stderr, '')
    } finally {
      child.kill()
      await once(child, 'exit').catch(() => {})
      await rm(file, { force: true })
    }
  })

  it('logs one line, with the reason, for a client on Socket.IO\'s default parser', async () => {
    const before = refusals().length
    // The example as it used to read: no `parser` option.
    const socket = io(url, { transports: ['websocket'], reconnection: false, forceNew: true })
    try {
      await eventually(() => refusals().length > before, { what: 'a refusal logged' })
      const [line] = refusals().slice(before)
      assert.equal(line.level, 40)
      assert.match(line.reason, /does not decode with Tandem's parser \(expected a binary frame\).*isomorphic\/parser\.js/)
      assert.equal(line.address.replace('::ffff:', ''), '127.0.0.1')
      assert.equal(refusals().length, before + 1, 'one line for the connection')
    } finally {
      socket.close()
    }
  })

  it('logs a handshake Engine.IO refuses, with its reason', async () => {
    const before = refusals().length
    const res = await fetch(`${url}/socket.io/?EIO=4&transport=carrier-pigeon`)
    assert.equal(res.status, 400)
    await eventually(() => refusals().length > before, { what: 'a refusal logged' })
    const [line] = refusals().slice(before)
    assert.equal(line.reason, 'Transport unknown')
    assert.equal(line.url, '/socket.io/')
  })

  it('has the shipped provider report a server whose packets do not decode, instead of retrying in silence', async () => {
    // A Socket.IO server on the default parser: not a Tandem server.
    const http = createHttpServer()
    const other = new Server(http)
    await new Promise(resolve => http.listen(0, '127.0.0.1', () => resolve(undefined)))
    const address = /** @type {import('node:net').AddressInfo} */ (http.address())
    const provider = new SocketIOProvider(`http://127.0.0.1:${address.port}`, 'somedoc', new Y.Doc(), { connect: false })
    /** @type {Error[]} */
    const errors = []
    provider.on('connection-error', err => errors.push(err))
    provider.connect()
    try {
      await eventually(() => errors.length > 0, { what: 'a connection-error' })
      assert.match(errors[0].message, /^http:\/\/127\.0\.0\.1:\d+ closed the connection before accepting it\. Is it a Tandem server\? .*isomorphic\/parser\.js/)
    } finally {
      provider.destroy()
      other.close()
      http.close()
    }
  })
})
