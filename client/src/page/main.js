import { isDocId } from '../../../isomorphic/ids.js'
import { renderEditor } from './editor-page.js'
import { renderSessionList } from './session-list.js'

// One page for both routes the server sends it on: / (the sessions) and /s/:id (an editor).
const root = /** @type {HTMLElement} */ (document.getElementById('app'))
const id = /^\/s\/([^/]+)\/?$/.exec(window.location.pathname)?.[1]
if (isDocId(id)) renderEditor(root, id)
else renderSessionList(root)
