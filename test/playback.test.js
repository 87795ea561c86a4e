import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as Y from 'yjs'
import { LONGEST_PAUSE_MS, Playback } from '../client/src/page/playback.js'
import { TEXT_NAME } from '../isomorphic/events.js'

/** Two editors typing into one document, each keystroke a step, as history records them. */
function typedSession () {
  const start = new Y.Doc()
  start.getText(TEXT_NAME).insert(0, '//\n')
  const base = Y.encodeStateAsUpdate(start)
  const ada = new Y.Doc()
  const bob = new Y.Doc()
  Y.applyUpdate(ada, base)
  Y.applyUpdate(bob, base)
  /** @type {import('../client/src/page/playback.js').Step[]} */
  const steps = []
  const texts = ['//\n']
  let at = 1_000
  /** @param {Y.Doc} ydoc @param {string} by @param {(text: Y.Text) => void} edit */
  const type = (ydoc, by, edit) => {
    const before = Y.encodeStateVector(ydoc)
    edit(ydoc.getText(TEXT_NAME))
    const update = Y.encodeStateAsUpdate(ydoc, before)
    Y.applyUpdate(ydoc === ada ? bob : ada, update)
    at += 150
    steps.push({ at, by, update })
    texts.push(ydoc.getText(TEXT_NAME).toString())
  }
  for (const ch of 'let a') type(ada, 'ada', text => text.insert(text.length, ch))
  at += 60_000
  for (const ch of 'fn b') type(bob, 'bob', text => text.insert(0, ch))
  type(ada, 'ada', text => text.delete(0, 2))
  return { base, steps, texts }
}

describe('playing a session back', () => {
  it('gives the text after any number of steps, forwards and back', () => {
    const { base, steps, texts } = typedSession()
    const playback = new Playback(base, steps)
    for (const index of [0, 3, steps.length, 1, 7, 5, 0, steps.length, 2]) {
      assert.equal(playback.seek(index), texts[index], `after ${index} steps`)
      assert.equal(playback.index, index)
    }
    assert.equal(playback.seek(steps.length + 5), texts.at(-1), 'seeking past the end stops at the last step')
    playback.destroy()
  })

  it('says who typed each part of the text, and null for what history started with', () => {
    const { base, steps } = typedSession()
    const playback = new Playback(base, steps)
    playback.seek(steps.length)
    assert.equal(playback.text, 'nf//\nlet a')
    assert.deepEqual(playback.spans().map(({ from, to, by }) => [playback.text.slice(from, to), by]), [['nf', 'bob'], ['//\n', null], ['let a', 'ada']])
    playback.seek(5)
    assert.deepEqual(playback.spans().map(({ by }) => by), [null, 'ada'])
    playback.destroy()
  })

  it('keeps the session\'s pace divided by the speed, with long pauses cut', () => {
    const { base, steps } = typedSession()
    const playback = new Playback(base, steps)
    assert.equal(playback.delayBefore(1, 1), 150)
    assert.equal(playback.delayBefore(1, 10), 15)
    assert.equal(playback.delayBefore(5, 1), LONGEST_PAUSE_MS, 'the minute between the two editors')
    assert.equal(playback.delayBefore(5, 20), LONGEST_PAUSE_MS / 20)
    playback.destroy()
  })
})
