import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { decodeFeedMessage, encodeFeedMessage } from '../server/storage/redis-doc-feed.js'

describe('feed messages', () => {
  const writes = [
    { docId: 'doc-1', message: { prev: '1732450000000-0', last: '1732450000001-3', updates: [new Uint8Array([0, 1, 2]), new Uint8Array(70000).fill(7)] } },
    { docId: 'dóc-2', message: { prev: '0-0', last: '1732450000002-0', updates: [new Uint8Array([9])] } }
  ]

  it('carry the origin and each document\'s span and updates, byte for byte', () => {
    const decoded = decodeFeedMessage(encodeFeedMessage('8a1c6e52-3f0b-4c55-9d59-1d2f8d0e7a41', writes))
    assert.deepEqual(decoded, { origin: '8a1c6e52-3f0b-4c55-9d59-1d2f8d0e7a41', writes })
  })

  it('are refused, not half read, when cut short, padded or of another format', () => {
    const bytes = encodeFeedMessage('origin', writes)
    for (const cut of [0, 3, 10, 40, bytes.length - 70001, bytes.length - 1]) assert.equal(decodeFeedMessage(bytes.subarray(0, cut)), null, `cut at ${cut}`)
    assert.equal(decodeFeedMessage(Buffer.concat([bytes, Buffer.from([0, 0])])), null)
    assert.equal(decodeFeedMessage(Buffer.concat([Buffer.from([2]), bytes.subarray(1)])), null)
  })
})
