import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import * as Y from 'yjs'
import { TEXT_NAME } from '../isomorphic/events.js'
import { readTyping } from '../server/documents/typing-update.js'
import { checkInFull, checkUpdate } from '../server/documents/update-check.js'
import { updateOf } from './helpers/update-of.js'

// The update check's reading of typing without decoding it (server/documents/typing-update.js) against
// the full check: whatever it takes, the full check takes too, with the same counts; everything
// else it leaves to the full check.

const LIMITS = { maxDocStructs: 100_000, maxDocClients: 10_000, maxTypeDepth: 4, rootTypes: [TEXT_NAME] }
const ROOTS = new Set(LIMITS.rootTypes)

/** A server's copy and an editor's, both holding `text`. @param {string} text */
function pair (text = 'function main () {}\n') {
  const seed = new Y.Doc()
  seed.getText(TEXT_NAME).insert(0, text)
  const server = new Y.Doc()
  const editor = new Y.Doc()
  Y.applyUpdate(server, Y.encodeStateAsUpdate(seed))
  Y.applyUpdate(editor, Y.encodeStateAsUpdate(seed))
  return { server, editor }
}

/** The full check's verdict: its counts, or the code it refuses with. @param {Uint8Array} update @param {Y.Doc} ydoc */
function fullVerdict (update, ydoc) {
  try {
    return checkInFull(update, ydoc, LIMITS)
  } catch (err) {
    return { refused: /** @type {{ code: string }} */ (err).code }
  }
}

/** One edit of an editor's text, as fast-check draws it. */
const edit = fc.record({
  kind: fc.constantFrom('insert', 'insert', 'delete'),
  at: fc.nat(),
  length: fc.integer({ min: 1, max: 12 }),
  text: fc.oneof(fc.string({ minLength: 1, maxLength: 12 }), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 }))
})

/** @param {Y.Text} text @param {{ kind: string, at: number, length: number, text: string }} step */
function apply (text, { kind, at, length, text: inserted }) {
  const position = at % (text.length + 1)
  if (kind === 'insert') text.insert(position, inserted)
  else text.delete(position, Math.min(length, text.length - position))
}

describe('typing read without decoding', () => {
  it('takes typing, deletions and text beyond ASCII, with the full check\'s counts', () => {
    const { server, editor } = pair()
    const updates = [
      updateOf(editor, text => text.insert(text.length, 'let x = 1')),
      updateOf(editor, text => text.insert(0, '// é 😀 中文\n')),
      updateOf(editor, text => text.delete(3, 4)),
      updateOf(editor, text => { text.insert(5, 'a'); text.insert(9, 'b'); text.delete(0, 1) }),
      updateOf(editor, () => {})
    ]
    for (const update of updates) {
      const typing = readTyping(update, server, ROOTS)
      assert.ok(typing, 'read as typing')
      assert.deepEqual(typing, fullVerdict(update, server))
      Y.applyUpdate(server, update)
    }
    assert.equal(server.getText(TEXT_NAME).toString(), editor.getText(TEXT_NAME).toString())
  })

  it('leaves to the full check what is not typing or would be refused', () => {
    const { server, editor } = pair()
    const missed = updateOf(editor, text => text.insert(0, 'missed '))
    const after = updateOf(editor, text => text.insert(0, 'after '))
    const nested = new Y.Doc()
    Y.applyUpdate(nested, Y.encodeStateAsUpdate(server))
    const other = pair().editor
    const cases = {
      'builds on an update the server lacks': after,
      'a nested type': updateOf(nested, () => nested.getArray(TEXT_NAME + '-list').insert(0, [new Y.Map()])),
      'a root type not allowed': updateOf(other, () => other.getText('elsewhere').insert(0, 'x')),
      'two clients\' structs': Y.mergeUpdates([missed, updateOf(pair().editor, text => text.insert(0, 'y'))]),
      garbage: Uint8Array.of(1, 1, 200, 1, 0, 4),
      truncated: missed.subarray(0, missed.length - 2)
    }
    for (const [what, update] of Object.entries(cases)) assert.equal(readTyping(update, server, ROOTS), null, what)
    assert.throws(() => checkUpdate(after, server, LIMITS), { code: 'OUT_OF_SYNC' })
    assert.throws(() => checkUpdate(cases['a root type not allowed'], server, LIMITS), { code: 'INVALID_UPDATE' })
    assert.throws(() => checkUpdate(cases.garbage, server, LIMITS), { code: 'INVALID_UPDATE' })
  })

  it('never takes what the full check refuses, for random edits by several editors and damaged bytes', () => {
    let typed = 0
    fc.assert(fc.property(
      fc.array(fc.tuple(fc.nat(2), fc.array(edit, { minLength: 1, maxLength: 3 }), fc.nat(7).map(n => n === 0)), { minLength: 1, maxLength: 25 }),
      fc.array(fc.tuple(fc.nat(), fc.nat(255)), { minLength: 1, maxLength: 3 }),
      (steps, damage) => {
        const { server } = pair('abc\ndef\n')
        const editors = [0, 1, 2].map(() => {
          const doc = new Y.Doc()
          Y.applyUpdate(doc, Y.encodeStateAsUpdate(server))
          return doc
        })
        for (const [who, edits, lost] of steps) {
          const editor = editors[who]
          const update = updateOf(editor, text => { for (const step of edits) apply(text, step) })
          // Some bytes changed, as a client that lies or a damaged frame would send them.
          const sent = Uint8Array.from(update)
          for (const [at, byte] of damage) sent[at % sent.length] = byte
          for (const bytes of [update, sent]) {
            const typing = readTyping(bytes, server, ROOTS)
            if (typing === null) continue
            typed++
            assert.deepEqual(fullVerdict(bytes, server), typing)
          }
          // Now and then an update never reaches the server, and its author's next ones build on it.
          if (!lost && !('refused' in fullVerdict(update, server))) Y.applyUpdate(server, update)
          for (const peer of editors) if (peer !== editor) Y.applyUpdate(peer, update)
        }
      }
    ), { numRuns: 300 })
    assert.ok(typed > 500, `${typed} updates read as typing`)
  })
})
