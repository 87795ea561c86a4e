import { minimalSetup } from 'codemirror'
import { EditorState, RangeSetBuilder, StateEffect, StateField } from '@codemirror/state'
import { Decoration, EditorView, lineNumbers } from '@codemirror/view'
import { getSession, historyUpdates, restoreText } from './api.js'
import { h } from './dom.js'
import { takeInviteToken } from './invite-token.js'
import { languageSupport } from './languages.js'
import { notices } from './notices.js'
import { Playback } from './playback.js'
import { colorOfName, mayEdit } from './user.js'

/** Playback speeds offered, as multiples of the session's own pace. */
const SPEEDS = [1, 2, 5, 10, 20]

/** @typedef {import('./playback.js').Span} Span */

/** Replaces the author marks with these spans. */
const setSpans = StateEffect.define({ map: (/** @type {Span[]} */ spans) => spans })

/** Each author's text tinted with their colour, redrawn at every step. */
const authorMarks = StateField.define({
  create: () => Decoration.none,
  update (marks, transaction) {
    for (const effect of transaction.effects) {
      if (!effect.is(setSpans)) continue
      /** @type {RangeSetBuilder<Decoration>} */
      const builder = new RangeSetBuilder()
      for (const { from, to, by } of effect.value) {
        if (by === null || from === to) continue
        builder.add(from, to, Decoration.mark({ attributes: { style: `background-color: ${colorOfName(by)}33`, title: by } }))
      }
      return builder.finish()
    }
    return marks.map(transaction.changes)
  },
  provide: field => EditorView.decorations.from(field)
})

/**
 * The history view at /s/:id/history: the session played back keystroke by keystroke, at 1x to
 * 20x, with who typed what, and a way to bring an earlier text back as a new edit (editors only).
 * @param {HTMLElement} root
 * @param {string} id
 */
export async function renderHistory (root, id) {
  const token = takeInviteToken(id)
  let session, recorded
  try {
    [session, recorded] = await Promise.all([getSession(id, token), historyUpdates(id, token)])
  } catch (err) {
    const { status, code } = /** @type {{ status?: number, code?: string }} */ (err)
    const message = status === 404
      ? 'No such session.'
      : code === 'HISTORY_GONE'
        ? 'This server keeps no history of this session (HISTORY_RETENTION is off, or the session is older than it).'
        : `Could not load the session's history: ${/** @type {Error} */ (err).message}`
    root.replaceChildren(h('main', { class: 'missing' }, [
      h('p', {}, [message]),
      h('a', { href: '/' }, ['All sessions'])
    ]))
    return
  }
  document.title = `${session.name} · history · Tandem`
  const playback = new Playback(recorded.state, recorded.steps)
  const { steps } = playback
  const messages = notices()

  const slider = /** @type {HTMLInputElement} */ (h('input', { type: 'range', class: 'timeline', min: '0', max: String(steps.length), value: String(steps.length), 'aria-label': 'Moment in the session' }))
  const playButton = h('button', { type: 'button', class: 'play' }, ['Play'])
  const speed = /** @type {HTMLSelectElement} */ (h('select', { class: 'speed', 'aria-label': 'Speed' }, SPEEDS.map(value => h('option', { value: String(value) }, [`${value}×`]))))
  speed.value = '5'
  const moment = h('span', { class: 'moment', 'aria-live': 'off' })
  const legend = h('ul', { class: 'authors', 'aria-label': 'Who typed' })
  const restoreButton = h('button', { type: 'button', class: 'restore' }, ['Restore this text'])
  const editorHost = h('div', { class: 'editor' })

  root.replaceChildren(
    h('header', { class: 'bar' }, [
      h('a', { href: '/', class: 'home' }, ['Tandem']),
      h('h1', {}, [session.name]),
      h('span', { class: 'language' }, ['history']),
      h('span', { class: 'spacer' }),
      h('a', { href: `/s/${encodeURIComponent(id)}` }, ['Back to the editor'])
    ]),
    h('div', { class: 'playback' }, [playButton, speed, slider, moment, ...(mayEdit(token) ? [restoreButton] : [])]),
    legend,
    messages.element,
    editorHost
  )

  const view = new EditorView({
    parent: editorHost,
    state: EditorState.create({
      doc: '',
      // No active line or cursor: nobody types here, and the tints alone say who wrote what.
      extensions: [minimalSetup, lineNumbers(), await languageSupport(session.language), EditorState.readOnly.of(true), EditorView.editable.of(false), authorMarks]
    })
  })

  /** Shows the text after `index` steps, its authors, and when that was. @param {number} index */
  const show = (index) => {
    const text = playback.seek(index)
    view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text }, effects: setSpans.of(playback.spans()) })
    slider.value = String(playback.index)
    const step = steps[playback.index - 1]
    moment.textContent = step ? `${new Date(step.at).toLocaleString()} · ${step.by ?? 'unknown'}` : 'Before the first recorded edit'
    const typed = new Map()
    for (const { by } of steps.slice(0, playback.index)) typed.set(by, (typed.get(by) ?? 0) + 1)
    legend.replaceChildren(...[...typed].map(([by, count]) => {
      const dot = h('span', { class: 'dot' })
      dot.style.backgroundColor = colorOfName(by)
      return h('li', {}, [dot, by ?? 'unknown', h('span', { class: 'count' }, [` ${count}`])])
    }))
  }

  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer
  const pause = () => {
    clearTimeout(timer)
    timer = undefined
    playButton.textContent = 'Play'
  }
  const next = () => {
    if (playback.index >= steps.length) return pause()
    show(playback.index + 1)
    timer = setTimeout(next, playback.delayBefore(playback.index, Number(speed.value)))
  }
  playButton.addEventListener('click', () => {
    if (timer !== undefined) return pause()
    if (playback.index >= steps.length) show(0)
    playButton.textContent = 'Pause'
    timer = setTimeout(next, 0)
  })
  slider.addEventListener('input', () => {
    pause()
    show(Number(slider.value))
  })
  restoreButton.addEventListener('click', async () => {
    const step = steps[playback.index - 1]
    if (!step) return
    pause()
    messages.clear('restore')
    try {
      await restoreText(id, new Date(step.at).toISOString(), token)
      messages.show('restore', `The text of ${new Date(step.at).toLocaleString()} is back, as a new edit everyone sees.`)
    } catch (err) {
      messages.show('restore', `Could not restore: ${/** @type {Error} */ (err).message}`)
    }
  })

  if (steps.length === 0) messages.show('empty', 'No edits are recorded for this session yet.')
  show(steps.length)
}
