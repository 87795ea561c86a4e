import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { compareIds } from '../server/storage/stream-ids.js'

describe('stream ids', () => {
  it('order as the two numbers they hold, not as text', () => {
    const ascending = ['0-0', '0-1', '0-10', '9-0', '9-2', '10-0', '1795544980000-0', '1795544980000-9', '1795544980000-10', '1795544980001-0']
    for (const [i, a] of ascending.entries()) {
      for (const [j, b] of ascending.entries()) {
        assert.equal(Math.sign(compareIds(a, b)), Math.sign(i - j), `${a} against ${b}`)
      }
    }
  })
})
