import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { renderFootprint } from '../bench/footprint-report.js'
import { runFootprint } from '../bench/redis-footprint.js'
import { KINDS, kindOf } from '../bench/redis-keys.js'
import { missing } from './helpers/processes.js'

const DOCUMENTS = 5
const DAY_MS = 24 * 3600 * 1000

/** @param {number} actual @param {number} expected */
const near = (actual, expected) => assert.ok(Math.abs(actual - expected) < 1e-6, `${actual} ≠ ${expected}`)

describe('the Redis footprint bench (npm run bench -- footprint)', () => {
  it('names the kind of every key Tandem writes, and counts any other key as other', () => {
    assert.equal(kindOf('tandem:{doc:abc}:log'), 'log')
    assert.equal(kindOf('tandem:{doc:abc}:snap'), 'snapshot')
    assert.equal(kindOf('tandem:{doc:abc}:seats'), 'seats')
    assert.equal(kindOf('tandem:{doc:abc}:connections:ada'), 'connections')
    assert.equal(kindOf('tandem:{doc:abc}:lock'), 'lock')
    assert.equal(kindOf('tandem:{doc:abc}:deleted'), 'tombstone')
    assert.equal(kindOf('tandem:{sessions}:records'), 'sessions')
    assert.equal(kindOf('tandem:{sessions}:order'), 'sessions')
    assert.equal(kindOf('tandem:{sessions}:revoked:abc'), 'revocations')
    assert.equal(kindOf('tandem:limit:joins-per-minute:127.0.0.1'), 'other')
    assert.equal(KINDS.at(-1)?.kind, 'other')
  })

  it('reports what idle and deleted documents leave, every figure derived from what Redis answered', { skip: missing('redis-server'), timeout: 120000 }, async () => {
    const report = await runFootprint({ documents: DOCUMENTS, chars: 200, updateChars: 1, idleMs: 200 })
    const { idle, deleted, contents } = report
    for (const stage of [idle, deleted]) {
      // Every key SCAN found is counted once, and the kinds add up to the whole.
      assert.equal(stage.keys, stage.dbsize)
      assert.equal(stage.kinds.reduce((total, kind) => total + kind.keys, 0), stage.keys)
      assert.equal(stage.kinds.reduce((total, kind) => total + kind.bytes, 0), stage.bytes)
      near(stage.kinds.reduce((total, kind) => total + kind.perDocumentBytes, 0), stage.perDocument.bytes)
      near(stage.perDocument.bytes, (stage.bytes - report.baseline.keys.reduce((total, key) => total + key.bytes, 0)) / DOCUMENTS)
      near(stage.perDocument.usedMemory, (stage.usedMemory - report.baseline.usedMemory) / DOCUMENTS)
    }
    const idleKind = (/** @type {string} */ kind) => idle.kinds.find(k => k.kind === kind)
    // An idle document is its snapshot hash and its session record: its emptied log is gone.
    assert.deepEqual(idle.kinds.filter(kind => kind.added > 0).map(kind => kind.kind).sort(), ['sessions', 'snapshot'])
    assert.equal(idleKind('snapshot')?.added, DOCUMENTS)
    assert.equal(contents.logs, 0)
    assert.equal(contents.snapshots, DOCUMENTS)
    // The snapshot holds the 200 characters typed, and is part of the snapshot hash's bytes.
    assert.ok(contents.snapshotBytes.min >= 200, JSON.stringify(contents.snapshotBytes))
    assert.ok((idleKind('snapshot')?.perDocumentBytes ?? 0) > contents.snapshotBytes.mean)
    assert.equal(contents.snapshotFields.data, DOCUMENTS)

    // A deleted document leaves no log, snapshot, seat or session record: only its tombstone, which expires.
    assert.deepEqual(deleted.kinds.filter(kind => kind.keys > 0).map(kind => kind.kind), ['tombstone'])
    assert.equal(deleted.kinds.find(kind => kind.kind === 'tombstone')?.added, DOCUMENTS)
    assert.ok(report.deletedKeys.every(key => key.kind === 'tombstone' && key.ttlMs > 6 * DAY_MS && key.ttlMs <= 7 * DAY_MS))

    const table = renderFootprint(report)
    assert.match(table, /\| snapshot: snapshot \(hash\) \| 5 \| hash /)
    assert.match(table, /\| tombstone: tombstone of a deleted document \| 5 \| string \(\w+\) \| \d+ \| 7\.00 d \|/)
  })
})
