import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SERVER_NODE_OPTIONS, syncWritesOf } from '../loadtest/spawn.js'
import { loadConfig } from '../server/config.js'
import { NODE_OPTIONS } from '../server/node-options.js'

// The load test imports nothing from server/ (eslint.config.js), so what it needs to know about the
// servers it starts it reads from package.json and the environment; these keep that equal to the server.

describe('the servers the load test spawns', () => {
  it('run with the server\'s Node.js options, which it reads from package.json\'s start script', () => {
    assert.deepEqual(SERVER_NODE_OPTIONS, NODE_OPTIONS)
  })

  it('are reported with SYNC_WRITES as the server reads it, and null for a value the server refuses', () => {
    for (const raw of ['true', '1', 'yes', 'false', '0', 'no', '', ' yes ']) {
      assert.equal(syncWritesOf({ SYNC_WRITES: raw }), loadConfig({ SYNC_WRITES: raw }).syncWrites, JSON.stringify(raw))
    }
    assert.throws(() => loadConfig({ SYNC_WRITES: 'maybe' }))
    assert.equal(syncWritesOf({ SYNC_WRITES: 'maybe' }), null)
  })
})
