import { isDocId } from '../../../isomorphic/ids.js'
import { renderEditor } from './editor-page.js'
import { renderSessionList } from './session-list.js'

// One page for the routes the server sends it on: / (the sessions), /s/:id (an editor) and
// /s/:id/history (its playback, a chunk of its own loaded only there).
const root = /** @type {HTMLElement} */ (document.getElementById('app'))
const [, id, view] = /^\/s\/([^/]+)(\/history)?\/?$/.exec(window.location.pathname) ?? []
if (isDocId(id) && view) import('./history-page.js').then(({ renderHistory }) => renderHistory(root, id))
else if (isDocId(id)) renderEditor(root, id)
else renderSessionList(root)
