import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { build } from '../client/build.js'
import { api, startServer, tempDataDir } from './helpers/server.js'

describe('the editor page routes', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let data
  before(async () => {
    await build()
    data = await tempDataDir()
    tandem = await startServer({ dataDir: data.dir })
  })
  after(async () => {
    await tandem.close()
    await data.remove()
  })

  it('serves the same page at / and /s/:id, confined to its own origin', async () => {
    for (const path of ['/', '/s/abc123']) {
      const res = await api(tandem.url, path)
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type') ?? '', /text\/html/)
      assert.match(String(res.body), /<script type="module" src="\/assets\/app.js">/)
      assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'/)
    }
  })

  it('serves the bundle from /assets and nothing from a CDN', async () => {
    const res = await api(tandem.url, '/assets/app.js')
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /javascript/)
    assert.doesNotMatch(String((await api(tandem.url, '/')).body), /https?:\/\//)
  })

  it('answers other paths with the API NOT_FOUND error', async () => {
    for (const path of ['/s/Not-An-Id', '/assets/missing.js', '/index.html']) {
      const res = await api(tandem.url, path)
      assert.equal(res.status, 404, path)
      assert.equal(res.body.error.code, 'NOT_FOUND')
    }
  })
})
