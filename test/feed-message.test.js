import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { decodeFeedMessage, encodeFeedMessage } from '../server/storage/redis-doc-feed.js'

describe('feed messages', () => {
  const message = { prev: '1732450000000-0', last: '1732450000001-3', updates: [new Uint8Array([0, 1, 2]), new Uint8Array(70000).fill(7)] }

  it('carry the origin, the span and every update, byte for byte', () => {
    const decoded = decodeFeedMessage(encodeFeedMessage('8a1c6e52-3f0b-4c55-9d59-1d2f8d0e7a41', message))
    assert.deepEqual(decoded, { origin: '8a1c6e52-3f0b-4c55-9d59-1d2f8d0e7a41', message })
  })

  it('are refused, not half read, when cut short or padded', () => {
    const bytes = encodeFeedMessage('origin', message)
    for (const cut of [0, 3, 10, bytes.length - 1]) assert.equal(decodeFeedMessage(bytes.subarray(0, cut)), null, `cut at ${cut}`)
    assert.equal(decodeFeedMessage(Buffer.concat([bytes, Buffer.from([0, 0])])), null)
  })
})
