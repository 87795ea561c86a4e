import * as monaco from 'monaco-editor/editor/editor.api.js'
import * as Y from 'yjs'
import { h } from './dom.js'
import { safeColor } from './user.js'

// Carets in Monaco in the CodeMirror page's awareness format: y-codemirror.next's `cursor` field,
// `{ anchor, head }` as Yjs relative positions. y-monaco publishes and draws a `selection` field of
// its own, which CodeMirror never reads, so the Monaco page binds only the text with y-monaco and
// its carets here. A remote `selection` is drawn too, for a client on plain y-monaco.

const { ABOVE, BELOW } = monaco.editor.ContentWidgetPositionPreference

/**
 * Publishes this editor's selection as `cursor` and draws the others': the selection tinted and the
 * caret a bar in their colour (y-monaco's classes `yRemoteSelection-<clientID>` and
 * `yRemoteSelectionHead-<clientID>`), with their name on a label above it. Names go in as text and
 * colours only as hex, so a remote state cannot add markup or CSS.
 * @param {monaco.editor.IStandaloneCodeEditor} editor showing `ytext` (bound by y-monaco)
 * @param {Y.Text} ytext
 * @param {import('y-protocols/awareness').Awareness} awareness
 * @returns {HTMLStyleElement} the others' colours, for the page to hold
 */
export function remoteCursors (editor, ytext, awareness) {
  const model = /** @type {monaco.editor.ITextModel} */ (editor.getModel())
  const ydoc = /** @type {Y.Doc} */ (ytext.doc)

  editor.onDidChangeCursorSelection(({ selection }) => {
    const anchor = Y.createRelativePositionFromTypeIndex(ytext, model.getOffsetAt(selection.getSelectionStart()))
    const head = Y.createRelativePositionFromTypeIndex(ytext, model.getOffsetAt(selection.getPosition()))
    const current = awareness.getLocalState()?.cursor
    if (current && Y.compareRelativePositions(current.anchor, anchor) && Y.compareRelativePositions(current.head, head)) return
    awareness.setLocalStateField('cursor', { anchor, head })
  })

  /** @param {unknown} json @returns {number | null} */
  const offsetOf = (json) => {
    try {
      const position = Y.createAbsolutePositionFromRelativePosition(Y.createRelativePositionFromJSON(json), ydoc)
      return position?.type === ytext ? position.index : null
    } catch {
      return null // one peer's unreadable position must not stop the others' carets being drawn
    }
  }

  const sheet = /** @type {HTMLStyleElement} */ (h('style'))
  const selections = editor.createDecorationsCollection()
  /** @type {Map<number, ReturnType<typeof nameLabel>>} */
  const labels = new Map()
  const render = () => {
    /** @type {monaco.editor.IModelDeltaDecoration[]} */
    const decorations = []
    const rules = []
    const drawn = new Set()
    for (const [clientId, state] of awareness.getStates()) {
      if (clientId === awareness.clientID || !Number.isInteger(clientId)) continue
      const cursor = state.cursor ?? state.selection
      const anchor = offsetOf(cursor?.anchor)
      const head = offsetOf(cursor?.head)
      if (anchor === null || head === null) continue
      const start = model.getPositionAt(Math.min(anchor, head))
      const end = model.getPositionAt(Math.max(anchor, head))
      const headClass = `yRemoteSelectionHead yRemoteSelectionHead-${clientId}`
      decorations.push({
        range: new monaco.Range(start.lineNumber, start.column, end.lineNumber, end.column),
        options: {
          className: `yRemoteSelection yRemoteSelection-${clientId}`,
          stickiness: monaco.editor.TrackedRangeStickiness.NeverGrowsWhenTypingAtEdges,
          ...(head > anchor ? { afterContentClassName: headClass } : { beforeContentClassName: headClass })
        }
      })
      const color = safeColor(state.user?.color)
      rules.push(`.yRemoteSelection-${clientId} { background-color: ${color}33; }`, `.yRemoteSelectionHead-${clientId} { border-color: ${color}; }`)

      let label = labels.get(clientId)
      if (!label) {
        label = nameLabel(clientId)
        labels.set(clientId, label)
        editor.addContentWidget(label)
      }
      label.at = model.getPositionAt(head)
      label.node.textContent = typeof state.user?.name === 'string' ? state.user.name : 'Anonymous'
      label.node.style.backgroundColor = color
      editor.layoutContentWidget(label)
      drawn.add(clientId)
    }
    for (const [clientId, label] of labels) {
      if (drawn.has(clientId)) continue
      editor.removeContentWidget(label)
      labels.delete(clientId)
    }
    selections.set(decorations)
    sheet.textContent = rules.join('\n')
  }
  awareness.on('change', render)
  // After y-monaco's observer, so the model already holds the text the positions point into.
  ytext.observe(render)
  render()
  return sheet
}

/**
 * A remote user's name, placed above their caret (below it on the first line).
 * @param {number} clientId
 */
function nameLabel (clientId) {
  const label = {
    node: h('div', { class: 'remote-name' }),
    /** @type {monaco.IPosition} */
    at: { lineNumber: 1, column: 1 },
    getId: () => `tandem.remote-name.${clientId}`,
    getDomNode: () => label.node,
    getPosition: () => ({ position: label.at, preference: [ABOVE, BELOW] })
  }
  return label
}
