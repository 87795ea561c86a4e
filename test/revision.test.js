import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { revisionOf } from '../server/documents/revision.js'
import { TEXT_NAME } from '../isomorphic/events.js'

describe('document revisions', () => {
  it('is the same for copies holding the same updates, and changes with an insertion or a deletion', () => {
    const a = new Y.Doc()
    a.getText(TEXT_NAME).insert(0, 'fn main() {}')
    const b = new Y.Doc()
    Y.applyUpdate(b, Y.encodeStateAsUpdate(a))
    assert.equal(revisionOf(a), revisionOf(b))

    const before = revisionOf(a)
    a.getText(TEXT_NAME).delete(0, 3)
    const deleted = revisionOf(a)
    assert.notEqual(deleted, before, 'a deletion left the revision as it was')
    a.getText(TEXT_NAME).insert(0, 'pub ')
    assert.notEqual(revisionOf(a), deleted)
    Y.applyUpdate(b, Y.encodeStateAsUpdate(a))
    assert.equal(revisionOf(b), revisionOf(a))
  })
})
