import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { editsBetween } from '../server/documents/text-diff.js'

/** @param {string} text @param {import('../server/documents/text-diff.js').TextEdit[]} edits */
function applied (text, edits) {
  for (const { at, delete: length, insert } of [...edits].reverse()) text = text.slice(0, at) + insert + text.slice(at + length)
  return text
}

/** A small deterministic generator (mulberry32), so a failure can be replayed. @param {number} seed */
function randomFrom (seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** @param {() => number} random @param {number} length @param {string[]} alphabet */
const textOf = (random, length, alphabet) => Array.from({ length }, () => alphabet[Math.floor(random() * alphabet.length)]).join('')

/** @param {string} text @param {number} at */
const insidePair = (text, at) => /[\ud800-\udbff]/.test(text[at - 1] ?? '') && /[\udc00-\udfff]/.test(text[at] ?? '')

describe('editsBetween', () => {
  it('gives sorted, separate edits that make the new text from the old, never cutting a surrogate pair', () => {
    const random = randomFrom(7)
    const alphabet = ['a', 'b', ' ', '\n', '😀', 'é', '\t']
    for (let n = 0; n < 500; n++) {
      const before = textOf(random, Math.floor(random() * 80), alphabet)
      const after = random() < 0.5
        ? textOf(random, Math.floor(random() * 80), alphabet)
        : before.slice(0, 10) + textOf(random, 4, alphabet) + before.slice(14)
      const edits = editsBetween(before, after)
      assert.equal(applied(before, edits), after, JSON.stringify({ before, after }))
      edits.forEach((edit, i) => {
        assert.ok(i === 0 || edit.at > edits[i - 1].at + edits[i - 1].delete, 'sorted, and neither touching nor overlapping')
        assert.ok(edit.delete > 0 || edit.insert !== '')
        assert.ok(!insidePair(before, edit.at) && !insidePair(before, edit.at + edit.delete), JSON.stringify({ before, after, edit }))
      })
    }
  })

  it('gives nothing for an unchanged text', () => {
    assert.deepEqual(editsBetween('same\n', 'same\n'), [])
  })

  it('turns a re-indentation of every line into an edit in each line\'s indentation', () => {
    const lines = Array.from({ length: 3000 }, (_, i) => `${'  '.repeat(i % 4)}call(${i})\n`)
    const before = lines.join('')
    const after = lines.map(line => `  ${line}`).join('')
    const edits = editsBetween(before, after)
    assert.equal(applied(before, edits), after)
    assert.equal(edits.length, 3000)
    assert.ok(edits.every(edit => edit.delete === 0 && edit.insert === '  '))
  })

  it('keeps the edits of a text too long to diff at once small, cutting it at lines found once in each', () => {
    const lines = Array.from({ length: 10_000 }, (_, i) => `${'  '.repeat(i % 4)}const v${i} = call(${i})\n`)
    const before = lines.join('')
    // Re-indented, with a blank line added every hundred lines: as many lines no longer pair up one to one.
    const after = lines.map((line, i) => (i % 100 === 0 ? '\n' : '') + `  ${line}`).join('')
    const edits = editsBetween(before, after)
    assert.equal(applied(before, edits), after)
    assert.equal(edits.length, 10_000)
    assert.ok(edits.every(edit => edit.delete === 0 && edit.insert.length <= 3), 'no edit reaches past a line\'s indentation')
  })

  it('keeps unchanged lines between changed ones out of the edits', () => {
    const before = 'a\nb\nc\nd\n'
    const after = 'a\nB\nc\nd\ne\n'
    assert.deepEqual(editsBetween(before, after), [{ at: 2, delete: 1, insert: 'B' }, { at: 8, delete: 0, insert: 'e\n' }])
  })

  it('replaces texts too unlike to diff within bounds as one edit between their common start and end', () => {
    const random = randomFrom(11)
    const lines = (/** @type {number} */ count, /** @type {string[]} */ alphabet) => Array.from({ length: count }, () => textOf(random, 12, alphabet) + '\n').join('')
    // Other line counts, so that the lines are not paired one to one either.
    const before = `head\n${lines(5000, ['x', 'y', 'z'])}tail\n`
    const after = `head\n${lines(4999, ['u', 'v', 'w'])}tail\n`
    const edits = editsBetween(before, after)
    assert.equal(applied(before, edits), after)
    assert.deepEqual(edits.map(edit => edit.at), [5])
  })
})
