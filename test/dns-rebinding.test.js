import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { rawRequest, startServer } from './helpers/server.js'

// DNS rebinding: another site points its own name at 127.0.0.1, and its page's requests to this
// server are then same-origin to the browser, so no CORS setting stops them. A server on loopback
// with auth off answers only to this machine's names, whatever CORS_ORIGIN allows.

describe('a loopback server with auth off', () => {
  for (const corsOrigin of ['http://localhost:5173', 'http://localhost:5173,https://editor.example', '*']) {
    it(`refuses requests for another host name with FORBIDDEN when CORS_ORIGIN=${corsOrigin}`, async (t) => {
      const tandem = await startServer({ corsOrigin })
      t.after(() => tandem.close())
      const { port } = new URL(tandem.url)
      const rebound = `rebind.evil.example:${port}`
      const json = { 'content-type': 'application/json' }

      const created = await rawRequest(tandem.url, 'POST', '/api/sessions', { ...json, host: rebound, origin: `http://${rebound}` }, '{"name":"z"}')
      assert.equal(created.status, 403, created.body)
      assert.equal(JSON.parse(created.body).error.code, 'FORBIDDEN')
      const listed = await rawRequest(tandem.url, 'GET', '/api/sessions', { host: rebound, origin: `http://${rebound}` })
      assert.equal(listed.status, 403, listed.body)
      const handshake = await rawRequest(tandem.url, 'GET', '/socket.io/?EIO=4&transport=polling', { host: rebound })
      assert.equal(handshake.status, 403, 'the Socket.IO handshake too')
      assert.match(handshake.body, /answers only to localhost/, 'with the reason')

      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
        const own = await rawRequest(tandem.url, 'POST', '/api/sessions', { ...json, host }, '{"name":"z"}')
        assert.equal(own.status, 201, `${host}: ${own.body}`)
        const fromDevServer = await rawRequest(tandem.url, 'POST', '/api/sessions', { ...json, host, origin: 'http://localhost:5173' }, '{"name":"z"}')
        assert.equal(fromDevServer.status, 201, `${host} from the dev server: ${fromDevServer.body}`)
      }
    })
  }
})
