import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import { createServer } from 'node:net'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as encoding from 'lib0/encoding'
import { io } from 'socket.io-client'
import WebSocket from 'ws'
import { PARSER } from '../isomorphic/parser.js'

// `npm run bench -- hostile [--root DIR]`: what three small hostile inputs cost a real server,
// started from DIR (default this checkout, so an older one can be measured the same way):
// - a 26-byte MessagePack frame before any auth whose map key is an array-like map of 1e8 elements;
// - 30 joins from one socket with a 1 MB state vector (250,000 entries), JOINS_PER_MINUTE=10;
// - five 1 MB updates, each one item of Any content holding 500,000 empty byte arrays.
// Each is bounded: the server is killed after it, and every wait has a timeout. Loopback only.

const FRAME = Buffer.from('8182a95f5f70726f746f5f5f90a66c656e677468ce05f5e100c0', 'hex')
const TIMEOUT_MS = 60_000

/** A free loopback port. */
async function freePort () {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = /** @type {import('node:net').AddressInfo} */ (server.address())
  server.close()
  return port
}

/**
 * Starts `node server/index.js` from `root` with `env`; resolves once it answers /api/health.
 * @param {string} root @param {Record<string, string>} env
 */
async function startServer (root, env) {
  const port = await freePort()
  const dataDir = `/tmp/tandem-hostile-${process.pid}-${port}`
  const child = spawn(process.execPath, ['server/index.js'], {
    cwd: root, stdio: 'ignore', env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent', CONNECTIONS_PER_MINUTE: '0', ...env }
  })
  const url = `http://127.0.0.1:${port}`
  const started = Date.now()
  while (!(await get(`${url}/api/health`).then(status => status === 200, () => false))) {
    if (Date.now() - started > TIMEOUT_MS) throw new Error('the server did not start')
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  const rssMB = () => Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1]) / 1024)
  return { url, rssMB, stop: () => { child.kill('SIGKILL') } }
}

/** A GET on a connection of its own (a kept-alive one may have been closed while the server was blocked). @param {string} url */
function get (url) {
  return new Promise((resolve, reject) => {
    http.get(url, { agent: false }, res => {
      res.resume()
      res.on('end', () => resolve(res.statusCode))
    }).on('error', reject)
  })
}

/** @param {string} url */
async function session (url) {
  const res = await fetch(`${url}/api/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"hostile"}' })
  return /** @type {{ id: string }} */ (await res.json()).id
}

/** @param {string} url */
async function connected (url) {
  const socket = io(url, { transports: ['websocket'], parser: PARSER, reconnection: false })
  await new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(undefined))
    socket.once('connect_error', reject)
  })
  return socket
}

/** @param {Record<string, number>} counts @param {string} key */
const count = (counts, key) => { counts[key] = (counts[key] ?? 0) + 1 }

/** @param {string} root */
async function frame (root) {
  const server = await startServer(root, {})
  const runs = []
  for (let run = 0; run < 3; run++) {
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/socket.io/?EIO=4&transport=websocket`)
    await once(ws, 'message')
    const closed = new Promise(resolve => ws.once('close', () => resolve(performance.now())))
    const sent = performance.now()
    ws.send(FRAME)
    await get(`${server.url}/api/health`)
    const health = performance.now() - sent
    const close = await Promise.race([closed, new Promise(resolve => setTimeout(() => resolve(NaN), 5000))])
    runs.push(`health ${Math.round(health)} ms, closed ${Number.isNaN(close) ? 'no' : `${Math.round(/** @type {number} */ (close) - sent)} ms`}`)
    ws.terminate()
  }
  server.stop()
  return `26-byte frame, 3 runs: ${runs.join('; ')}`
}

/** @param {string} root */
async function stateVectors (root) {
  const server = await startServer(root, { JOINS_PER_MINUTE: '10', BYTES_PER_SECOND: String(64 * 1048576), MAX_UPDATE_BYTES: String(2 * 1048576) })
  const id = await session(server.url)
  const sv = encoding.createEncoder()
  encoding.writeVarUint(sv, 250_000)
  for (let client = 1; client <= 250_000; client++) {
    encoding.writeVarUint(sv, client)
    encoding.writeVarUint(sv, 1)
  }
  const bytes = encoding.toUint8Array(sv)
  const socket = await connected(server.url)
  const started = performance.now()
  const replies = await Promise.all(Array.from({ length: 30 }, () => socket.timeout(TIMEOUT_MS).emitWithAck('doc:join', { doc: id, sv: bytes }).catch(() => null)))
  const elapsed = performance.now() - started
  /** @type {Record<string, number>} */
  const codes = {}
  for (const reply of replies) count(codes, reply === null ? 'no reply' : reply.ok ? 'ok' : reply.error.code)
  socket.close()
  server.stop()
  return `30 joins with a ${bytes.byteLength}-byte state vector: answered in ${Math.round(elapsed)} ms, ${JSON.stringify(codes)}`
}

/** @param {string} root */
async function anyValues (root) {
  const server = await startServer(root, { UPDATES_PER_SECOND: '0', BYTES_PER_SECOND: '0', MAX_UPDATE_BYTES: String(2 * 1048576) })
  const id = await session(server.url)
  const socket = await connected(server.url)
  await socket.timeout(TIMEOUT_MS).emitWithAck('doc:join', { doc: id })
  const rssBefore = server.rssMB()
  /** @type {Record<string, number>} */
  const codes = {}
  for (let i = 0; i < 5; i++) {
    const update = encoding.createEncoder()
    for (const n of [1, 1, 1000 + i, 0]) encoding.writeVarUint(update, n) // one section of one struct, clock 0
    encoding.writeUint8(update, 8) // Any content, placed by its parent
    encoding.writeVarUint(update, 1)
    encoding.writeVarString(update, 'content')
    encoding.writeVarUint(update, 500_000)
    for (let k = 0; k < 500_000; k++) {
      encoding.writeUint8(update, 116) // an empty byte array
      encoding.writeVarUint(update, 0)
    }
    encoding.writeVarUint(update, 0)
    const reply = await socket.timeout(TIMEOUT_MS).emitWithAck('doc:update', { doc: id, update: encoding.toUint8Array(update) }).catch(() => null)
    count(codes, reply === null ? 'no reply' : reply.ok ? 'ok' : reply.error.code)
  }
  const rssAfter = server.rssMB()
  socket.close()
  server.stop()
  return `five 1 MB updates of 500,000 values: ${JSON.stringify(codes)}, server RSS ${rssBefore} → ${rssAfter} MB`
}

/** @param {string[]} argv */
export async function main (argv) {
  const at = argv.indexOf('--root')
  const root = resolve(at === -1 ? fileURLToPath(new URL('..', import.meta.url)) : argv[at + 1])
  console.log(`server from ${root}, node ${process.version}`)
  for (const measure of [frame, stateVectors, anyValues]) console.log(await measure(root))
}
