import { DOC_ID_PATTERN } from '../../../isomorphic/protocol.js'
import { renderEditor } from './editor-page.js'
import { renderSessionList } from './session-list.js'

// One page for both routes the server sends it on: / (the sessions) and /s/:id (an editor).
const root = /** @type {HTMLElement} */ (document.getElementById('app'))
const id = /^\/s\/([^/]+)\/?$/.exec(window.location.pathname)?.[1]
if (id && DOC_ID_PATTERN.test(id)) renderEditor(root, id)
else renderSessionList(root)
