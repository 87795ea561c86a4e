import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { createServer } from 'node:http'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import * as esbuild from 'esbuild'
import { chromium } from 'playwright-core'
import { io } from 'socket.io-client'
import parser from 'socket.io-msgpack-parser'
import { Awareness, applyAwarenessUpdate, encodeAwarenessUpdate } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { contentOf, createSession, startServer } from './helpers/server.js'

// Clients written against Socket.IO's documentation use socket.io-msgpack-parser, not Tandem's
// modules. Both ends are checked here: such a client's joins, updates and awareness reach editors
// on Tandem's parser, and theirs reach it, on Node and in Chromium.

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const CHROMIUM = '/usr/bin/chromium'
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking']
const noChromium = !existsSync(CHROMIUM) && process.env.CI !== 'true' && `no Chromium at ${CHROMIUM}`
const protocolDoc = await readFile(new URL('../docs/PROTOCOL.md', import.meta.url), 'utf8')

/** The first ```js block after `heading` in docs/PROTOCOL.md. @param {string} heading */
function codeBlockAfter (heading) {
  const match = /```js\n([\s\S]*?)```/.exec(protocolDoc.slice(protocolDoc.indexOf(heading)))
  assert.ok(match, `no js block after ${heading}`)
  return match[1]
}

/** A socket on socket.io-msgpack-parser, connected. @param {string} url */
async function msgpackSocket (url) {
  const socket = io(url, { transports: ['websocket'], parser, forceNew: true, reconnection: false })
  await new Promise(resolve => socket.once('connect', () => resolve(undefined)))
  return socket
}

describe('a client on socket.io-msgpack-parser, the parser Socket.IO documents', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  // The browser's page comes from another origin, as on a site that embeds Tandem.
  before(async () => { tandem = await startServer({ corsOrigin: '*' }) })
  after(async () => { await tandem.close() })

  it('joins with the bare Uint8Arrays Yjs returns, and its updates and awareness reach an editor on Tandem\'s parser', async () => {
    const { id } = await createSession(tandem.url, { content: 'seed\n' })
    const editor = new TestEditor(tandem.url)
    await editor.join(id)
    const socket = await msgpackSocket(tandem.url)
    const ydoc = new Y.Doc()
    const joined = await socket.timeout(5000).emitWithAck('doc:join', { doc: id, sv: Y.encodeStateVector(ydoc) })
    assert.equal(joined.ok, true, JSON.stringify(joined.error))
    Y.applyUpdate(ydoc, new Uint8Array(joined.update))
    assert.equal(ydoc.getText('content').toString(), 'seed\n')

    const before = Y.encodeStateVector(ydoc)
    ydoc.getText('content').insert(5, 'from msgpack')
    const update = Y.encodeStateAsUpdate(ydoc, before)
    assert.ok(!Buffer.isBuffer(update), 'a bare Uint8Array, which the parser sends as ext type 0')
    assert.deepEqual(await socket.timeout(5000).emitWithAck('doc:update', { doc: id, update }), { ok: true })
    await eventually(() => editor.text(id) === 'seed\nfrom msgpack', { what: 'the editor receiving the broadcast' })

    const awareness = new Awareness(ydoc)
    awareness.setLocalStateField('user', { name: 'msgpack', color: '#859900' })
    const ack = await socket.timeout(5000).emitWithAck('doc:awareness', { doc: id, update: encodeAwarenessUpdate(awareness, [ydoc.clientID]) })
    assert.deepEqual(ack, { ok: true })
    await eventually(() => editor.received.some(({ event }) => event === 'doc:awareness'), { what: 'the awareness update relayed' })
    awareness.destroy()
    socket.close()
    editor.close()
  })

  it('receives what an editor on Tandem\'s parser types, as bytes Yjs applies', async () => {
    const { id } = await createSession(tandem.url)
    const socket = await msgpackSocket(tandem.url)
    const ydoc = new Y.Doc()
    socket.on('doc:update', ({ update }) => Y.applyUpdate(ydoc, new Uint8Array(update)))
    assert.equal((await socket.timeout(5000).emitWithAck('doc:join', { doc: id })).ok, true)
    const editor = new TestEditor(tandem.url)
    await editor.join(id)
    assert.deepEqual(await editor.insert(id, 0, 'from Tandem'), { ok: true })
    await eventually(() => ydoc.getText('content').toString() === 'from Tandem', { what: 'the broadcast applied' })
    socket.close()
    editor.close()
  })

  it('refuses bytes sent in a form it does not take, saying what arrived', async () => {
    const { id } = await createSession(tandem.url)
    const socket = await msgpackSocket(tandem.url)
    const cases = [
      [{ doc: id, sv: 'AAE=' }, /`sv` must be binary .*got a string of 4 characters/],
      [{ doc: id, sv: [0, 1] }, /got an array of 2 items/],
      [{ doc: id, sv: { 0: 0, 1: 1 } }, /got a map of 2 keys/]
    ]
    for (const [payload, message] of cases) {
      const reply = await socket.timeout(5000).emitWithAck('doc:join', payload)
      assert.equal(reply.ok, false)
      assert.equal(reply.error.code, 'BAD_REQUEST')
      assert.match(reply.error.message, /** @type {RegExp} */ (message))
    }
    socket.close()
  })

  it('runs the example of docs/PROTOCOL.md "Clients in other languages" as written, both ways', async () => {
    const { id } = await createSession(tandem.url, { content: 'seed\n' })
    const editor = new TestEditor(tandem.url)
    await editor.join(id)
    const file = `${ROOT}msgpack-client-${randomBytes(4).toString('hex')}.mjs`
    await writeFile(file, codeBlockAfter('## Clients in other languages'))
    const child = spawn(process.execPath, [file, tandem.url, id], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', chunk => { stdout += chunk })
    child.stderr.on('data', chunk => { stderr += chunk })
    try {
      await eventually(() => stdout.includes('stored: "seed\\nhello from msgpack\\n"'), { timeoutMs: 15000, what: `the example storing its line (stderr: ${stderr})` })
      assert.equal(await contentOf(tandem.url, id), 'seed\nhello from msgpack\n')
      await eventually(() => editor.received.some(({ event }) => event === 'doc:awareness'), { what: 'the example\'s awareness relayed' })
      assert.deepEqual(await editor.insert(id, 0, '> '), { ok: true })
      await eventually(() => stdout.includes('text: "> seed\\nhello from msgpack\\n"'), { what: `the example printing the editor's edit (stderr: ${stderr})` })
      assert.equal(stderr, '')
    } finally {
      child.kill()
      await once(child, 'exit').catch(() => {})
      await rm(file, { force: true })
      editor.close()
    }
  })

  describe('in Chromium, bundled by esbuild', { skip: noChromium }, () => {
    /** @type {import('playwright-core').Browser} */
    let browser
    /** @type {import('node:http').Server} */
    let pageServer
    /** @type {string} */
    let pageUrl
    before(async () => {
      const built = await esbuild.build({
        entryPoints: [fileURLToPath(new URL('./fixtures/msgpack-browser-client.js', import.meta.url))],
        bundle: true,
        format: 'iife',
        platform: 'browser',
        write: false,
        logLevel: 'warning'
      })
      // The page comes from a server of its own on loopback, as a site using Tandem would serve it
      // (Chromium refuses loopback connections to a page fulfilled from nowhere).
      const html = `<!doctype html><title>interop</title><script>${built.outputFiles[0].text.replaceAll('</script', '<\\/script')}</script>`
      pageServer = createServer((req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html))
      await new Promise(resolve => pageServer.listen(0, '127.0.0.1', () => resolve(undefined)))
      pageUrl = `http://127.0.0.1:${/** @type {import('node:net').AddressInfo} */ (pageServer.address()).port}/`
      browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS })
    })
    after(async () => {
      await browser?.close()
      pageServer?.closeAllConnections()
      await new Promise(resolve => pageServer?.close(resolve))
    })

    it('joins, updates, relays awareness and gets ACKs both ways with an editor on Tandem\'s parser', async () => {
      const { id } = await createSession(tandem.url, { content: 'seed\n' })
      const editor = new TestEditor(tandem.url)
      await editor.join(id)
      const page = await browser.newPage()
      await page.goto(pageUrl)
      await page.evaluate(([url, doc]) => /** @type {any} */ (window).startClient(url, doc), [tandem.url, id])
      assert.equal(await page.evaluate(() => /** @type {any} */ (window).client.text()), 'seed\n')

      await page.evaluate(() => /** @type {any} */ (window).client.append('from Chromium'))
      await eventually(() => editor.text(id) === 'seed\nfrom Chromium', { what: 'the editor receiving the page\'s update' })
      // The ACK comes once the update is stored, which may be after the broadcast.
      await eventually(async () => JSON.stringify(await page.evaluate(() => /** @type {any} */ (window).client.acks())) === '[{"ok":true}]', { what: 'the page\'s update acknowledged' })

      await page.evaluate(() => /** @type {any} */ (window).client.announce('chromium'))
      await eventually(() => editor.received.some(({ event }) => event === 'doc:awareness'), { what: 'the page\'s awareness relayed' })
      // Awareness the other way, between the page and a Node client on the same parser: each sees the other's name.
      const node = await msgpackSocket(tandem.url)
      const nodeDoc = new Y.Doc()
      const nodeAwareness = new Awareness(nodeDoc)
      const joined = await node.timeout(5000).emitWithAck('doc:join', { doc: id, sv: Y.encodeStateVector(nodeDoc) })
      applyAwarenessUpdate(nodeAwareness, new Uint8Array(joined.awareness), 'server')
      assert.ok([...nodeAwareness.getStates().values()].some(state => state.user?.name === 'chromium'), 'the page\'s state in the join ACK')
      nodeAwareness.setLocalStateField('user', { name: 'node', color: '#859900' })
      node.emit('doc:awareness', { doc: id, update: encodeAwarenessUpdate(nodeAwareness, [nodeDoc.clientID]) })
      await eventually(async () => (await page.evaluate(() => /** @type {any} */ (window).client.names())).includes('node'), { what: 'the page showing the Node client\'s name' })
      nodeAwareness.destroy()
      node.close()

      assert.deepEqual(await editor.insert(id, 0, '> '), { ok: true })
      await eventually(async () => await page.evaluate(() => /** @type {any} */ (window).client.text()) === '> seed\nfrom Chromium', { what: 'the page applying the editor\'s update' })
      assert.equal(await contentOf(tandem.url, id), '> seed\nfrom Chromium')

      // What the docs warn about: in a browser the parser makes a Uint8Array a map of its indices.
      const refused = await page.evaluate(() => /** @type {any} */ (window).client.sendBareUint8Array())
      assert.equal(refused.error.code, 'BAD_REQUEST')
      assert.match(refused.error.message, /`update` must be binary .*got a map of \d+ keys/)

      await page.evaluate(() => /** @type {any} */ (window).client.close())
      await page.close()
      editor.close()
    })
  })
})
