import assert from 'node:assert/strict'
import { request } from 'node:http'
import { after, before, describe, it } from 'node:test'
import { brotliDecompressSync, gunzipSync } from 'node:zlib'
import { build } from '../client/build.js'
import { api, startServer, tempDataDir } from './helpers/server.js'

/**
 * A GET whose body is returned as the bytes that came, not decoded.
 * @param {string} url
 * @param {Record<string, string>} headers
 * @returns {Promise<{ headers: import('node:http').IncomingHttpHeaders, body: Buffer }>}
 */
function rawGet (url, headers) {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      /** @type {Buffer[]} */
      const chunks = []
      res.on('data', chunk => chunks.push(chunk))
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }))
      res.on('error', reject)
    }).on('error', reject).end()
  })
}

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

  it('serves the same page at /, /s/:id and /s/:id/history, confined to its own origin', async () => {
    for (const path of ['/', '/s/abc123', '/s/abc123/history']) {
      const res = await api(tandem.url, path)
      assert.equal(res.status, 200)
      assert.match(res.headers.get('content-type') ?? '', /text\/html/)
      assert.match(String(res.body), /<script type="module" src="\/assets\/app-[A-Z0-9]{8}\.js">/)
      assert.match(res.headers.get('content-security-policy') ?? '', /default-src 'self'/)
      assert.equal(res.headers.get('cache-control'), 'no-cache', 'a page names the current build: always revalidated')
    }
  })

  /** The URL paths of the scripts and stylesheets a page names. @param {string} path */
  const assetsOf = async (path) => [...String((await api(tandem.url, path)).body).matchAll(/(?:src|href|content)="(\/assets\/[^"]+)"/g)].map(([, url]) => url)

  it('serves the bundle from /assets and nothing from a CDN', async () => {
    const [script] = (await assetsOf('/')).filter(url => url.endsWith('.js'))
    const res = await api(tandem.url, script)
    assert.equal(res.status, 200)
    assert.match(res.headers.get('content-type') ?? '', /javascript/)
    assert.doesNotMatch(String((await api(tandem.url, '/')).body), /https?:\/\//)
  })

  it('sends each asset brotli- or gzip-compressed as the browser accepts, cached for a year under its hashed name', async () => {
    const urls = [...await assetsOf('/'), ...await assetsOf('/s/abc123?editor=monaco')]
    assert.ok(urls.length >= 5, `assets named by the pages: ${urls}`)
    for (const url of urls) {
      const plain = await fetch(`${tandem.url}${url}`, { headers: { 'accept-encoding': 'identity' } })
      const original = Buffer.from(await plain.arrayBuffer())
      assert.equal(plain.headers.get('content-encoding'), null, url)
      for (const [accept, encoding, decode] of /** @type {const} */ ([
        ['gzip, deflate, br, zstd', 'br', brotliDecompressSync],
        ['gzip', 'gzip', gunzipSync],
        ['br;q=0.5, gzip;q=1', 'gzip', gunzipSync]
      ])) {
        // undici's fetch would decode the body itself: read the bytes as they came.
        const res = await rawGet(`${tandem.url}${url}`, { 'accept-encoding': accept })
        assert.equal(res.headers['content-encoding'], encoding, `${url} for ${accept}`)
        assert.equal(res.headers['cache-control'], 'public, max-age=31536000, immutable', url)
        assert.match(res.headers.vary ?? '', /accept-encoding/i)
        assert.equal(Number(res.headers['content-length']), res.body.length)
        assert.ok(res.body.length < original.length, `${url} is smaller as ${encoding}`)
        assert.deepEqual(decode(res.body), original, `${url} as ${encoding} decodes to the file`)
      }
    }
  })

  it('serves the Monaco page at /s/:id?editor=monaco, and the CodeMirror page loads nothing of Monaco', async () => {
    const monaco = await assetsOf('/s/abc123?editor=monaco')
    assert.ok(monaco.some(url => /\/monaco-[A-Z0-9]{8}\.js$/.test(url)), `${monaco}`)
    assert.ok(monaco.some(url => /\/editor\.worker-[A-Z0-9]{8}\.js$/.test(url)), 'the worker is named for the page')
    const codemirror = await assetsOf('/')
    assert.ok(codemirror.every(url => !/monaco|worker/.test(url)), `${codemirror}`)
    assert.equal((await api(tandem.url, '/s/abc123?editor=vim')).status, 404)
  })

  it('answers other paths with the API NOT_FOUND error', async () => {
    for (const path of ['/s/Not-An-Id', '/s/Not-An-Id/history', '/assets/missing.js', '/index.html', '/assets/..%2Findex.html', '/assets/style.css']) {
      const res = await api(tandem.url, path)
      assert.equal(res.status, 404, path)
      assert.equal(res.body.error.code, 'NOT_FOUND')
    }
  })
})
