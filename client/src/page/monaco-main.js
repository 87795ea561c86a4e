import * as monaco from 'monaco-editor/editor/editor.api.js'
import { MonacoBinding } from 'y-monaco'
import * as Y from 'yjs'
import { TEXT_NAME } from '../../../isomorphic/events.js'
import { isDocId } from '../../../isomorphic/ids.js'
import { SocketIOProvider } from '../provider.js'
import { getSession } from './api.js'
import { showConnectionErrors } from './connection-errors.js'
import { h } from './dom.js'
import { takeInviteToken } from './invite-token.js'
import { remoteCursors } from './monaco-cursors.js'
import { monacoLanguage } from './monaco-languages.js'
import { notices } from './notices.js'
import { presenceList } from './presence.js'
import { statusBadge } from './status-badge.js'
import { awarenessUser, guardRemoteUsers, loadUser, tokenUser } from './user.js'

// The recipe for Monaco users, served at /s/:id?editor=monaco: Monaco bound to the session's
// document by y-monaco, over the same provider as the CodeMirror page, with carets in the same
// awareness format (monaco-cursors.js), so the two editors see each other. A bundle of its own
// (client/build.js), so the CodeMirror page loads none of Monaco.

// Monaco runs its text model's diffing in a worker. client/build.js bundles it beside the page (from
// this origin, as the page's policy requires) and names its hashed file in a meta element.
const workerUrl = document.querySelector('meta[name="monaco-worker"]')?.getAttribute('content') ?? ''
Object.assign(window, { MonacoEnvironment: { getWorker: () => new window.Worker(workerUrl, { type: 'module' }) } })

const root = /** @type {HTMLElement} */ (document.getElementById('app'))
const id = /^\/s\/([^/]+)\/?$/.exec(window.location.pathname)?.[1]
if (isDocId(id)) renderMonaco(root, id)

/**
 * @param {HTMLElement} root
 * @param {string} id
 */
async function renderMonaco (root, id) {
  const token = takeInviteToken(id)
  const session = await getSession(id, token).catch(() => null)
  if (!session) {
    root.replaceChildren(h('main', { class: 'missing' }, [h('p', {}, ['No such session.']), h('a', { href: '/' }, ['All sessions'])]))
    return
  }
  document.title = `${session.name} · Tandem`
  const ydoc = new Y.Doc()
  const provider = new SocketIOProvider(window.location.origin, id, ydoc, { token })
  guardRemoteUsers(provider.awareness)
  const named = tokenUser(token)
  const user = named ? { ...loadUser(), name: named } : loadUser()
  provider.awareness.setLocalStateField('user', awarenessUser(user))

  const messages = notices()
  showConnectionErrors(provider, messages)
  const editorHost = h('div', { class: 'editor monaco' })
  root.replaceChildren(
    h('header', { class: 'bar' }, [
      h('a', { href: '/', class: 'home' }, ['Tandem']),
      h('h1', {}, [session.name]),
      statusBadge(provider),
      h('span', { class: 'spacer' }),
      h('a', { href: `/s/${id}` }, ['CodeMirror'])
    ]),
    h('div', { class: 'who' }, [presenceList(provider.awareness)]),
    messages.element,
    editorHost
  )
  const editor = monaco.editor.create(editorHost, {
    value: '',
    language: monacoLanguage(session.language),
    automaticLayout: true,
    minimap: { enabled: false }
  })
  const model = /** @type {monaco.editor.ITextModel} */ (editor.getModel())
  const ytext = ydoc.getText(TEXT_NAME)
  // Keeps the model and the text equal both ways. No awareness here: y-monaco's carets use a field
  // CodeMirror does not read, so monaco-cursors.js publishes and draws them instead.
  // eslint-disable-next-line no-new
  new MonacoBinding(ytext, model, new Set([editor]))
  root.append(remoteCursors(editor, ytext, provider.awareness))
  provider.on('status', ({ status }) => {
    if (status === 'connected' && provider.role === 'viewer') editor.updateOptions({ readOnly: true })
  })
  editor.focus()
}
