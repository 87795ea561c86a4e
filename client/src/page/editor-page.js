import { basicSetup } from 'codemirror'
import { Compartment, EditorState } from '@codemirror/state'
import { EditorView } from '@codemirror/view'
import { yCollab } from 'y-codemirror.next'
import * as Y from 'yjs'
import { ERRORS } from '../../../isomorphic/error-codes.js'
import { CLOSE_REASONS, TEXT_NAME } from '../../../isomorphic/events.js'
import { SocketIOProvider } from '../provider.js'
import { getSession, updateSession } from './api.js'
import { showConnectionErrors } from './connection-errors.js'
import { h } from './dom.js'
import { takeInviteToken } from './invite-token.js'
import { LANGUAGES, languageSupport } from './languages.js'
import { notices } from './notices.js'
import { presenceList } from './presence.js'
import { shareLink } from './share-link.js'
import { statusBadge } from './status-badge.js'
import { awarenessUser, guardRemoteUsers, loadUser, saveUser, tokenUser } from './user.js'

/**
 * The editor at /s/:id: CodeMirror bound to the session's document, with status, share link, the
 * user's name and who else is here. With auth on, the invitation link carries a join token in its
 * fragment (`/s/:id#token=…`), which never reaches a server log and leaves the address bar once read.
 * @param {HTMLElement} root
 * @param {string} id
 */
export async function renderEditor (root, id) {
  const token = takeInviteToken(id)
  let session
  try {
    session = await getSession(id, token)
  } catch (err) {
    const message = /** @type {{ status?: number }} */ (err).status === 404 ? 'No such session.' : `Could not load the session: ${/** @type {Error} */ (err).message}`
    root.replaceChildren(h('main', { class: 'missing' }, [h('p', {}, [message]), h('a', { href: '/' }, ['All sessions'])]))
    return
  }
  document.title = `${session.name} · Tandem`
  const syntax = await languageSupport(session.language)

  const ydoc = new Y.Doc()
  const ytext = ydoc.getText(TEXT_NAME)
  const provider = new SocketIOProvider(window.location.origin, id, ydoc, { token })
  // Before anything that draws remote users listens to awareness.
  guardRemoteUsers(provider.awareness)
  // With a token the server knows who this is: show that name, not the one kept in this browser.
  const named = tokenUser(token)
  let user = named ? { ...loadUser(), name: named } : loadUser()
  provider.awareness.setLocalStateField('user', awarenessUser(user))

  const nameField = /** @type {HTMLInputElement} */ (h('input', { id: 'your-name', maxlength: '40', 'aria-label': 'Your name' }))
  nameField.value = user.name
  if (named) nameField.readOnly = true
  nameField.addEventListener('change', () => {
    const name = nameField.value.trim()
    if (!name) return
    user = { ...user, name }
    saveUser(user)
    provider.awareness.setLocalStateField('user', awarenessUser(user))
  })

  const messages = notices()
  const syntaxSlot = new Compartment()
  // The session's language, changeable here: saved for everyone when the server allows it (auth
  // off; with auth on only the API key may change a session), otherwise for this page only.
  const languagePicker = /** @type {HTMLSelectElement} */ (h('select', { class: 'language', 'aria-label': 'Language' },
    [...new Set([session.language, ...LANGUAGES])].map(id => h('option', { value: id }, [id]))))
  languagePicker.value = session.language
  languagePicker.addEventListener('change', async () => {
    const language = languagePicker.value
    view.dispatch({ effects: syntaxSlot.reconfigure(await languageSupport(language)) })
    messages.clear('language')
    try {
      await updateSession(id, { language })
    } catch {
      messages.show('language', `Highlighting as ${language} on this page only: changing the session's language needs the API key.`)
    }
  })
  const editorHost = h('div', { class: 'editor' })
  root.replaceChildren(
    h('header', { class: 'bar' }, [
      h('a', { href: '/', class: 'home' }, ['Tandem']),
      h('h1', {}, [session.name]),
      languagePicker,
      statusBadge(provider),
      h('span', { class: 'spacer' }),
      h('a', { href: `/s/${encodeURIComponent(id)}/history`, class: 'history-link' }, ['History']),
      // Auth on: each person needs a link with their own token, minted by the backend.
      ...(token ? [] : [shareLink(`${window.location.origin}/s/${id}`)])
    ]),
    h('div', { class: 'who' }, [h('label', {}, ['You: ', nameField]), presenceList(provider.awareness)]),
    messages.element,
    editorHost
  )

  const editable = new Compartment()
  const view = new EditorView({
    parent: editorHost,
    state: EditorState.create({
      doc: ytext.toString(),
      extensions: [
        basicSetup,
        syntaxSlot.of(syntax),
        editable.of(EditorView.editable.of(true)),
        yCollab(ytext, provider.awareness, { undoManager: new Y.UndoManager(ytext) })
      ]
    })
  })

  showConnectionErrors(provider, messages)
  provider.on('refused', ({ event, code, message, retry }) => {
    // A refused handshake is a connection error, shown as one.
    if (event === 'connect') return
    messages.show(code, retry ? `${message} (${code}); retrying.` : `The server refused an edit: ${message} (${code}).`)
  })
  // A retryable refusal is over once the document is joined again.
  const retryable = Object.entries(ERRORS).filter(([, { retry }]) => retry).map(([code]) => code)
  provider.on('status', ({ status }) => {
    if (status !== 'connected') return
    for (const code of retryable) messages.clear(code)
    if (provider.role === 'viewer') {
      messages.show('viewer', 'You are a viewer: you see every edit, and yours are not sent.')
      view.dispatch({ effects: editable.reconfigure(EditorView.editable.of(false)) })
    }
  })
  provider.on('closed', ({ reason }) => {
    if (reason === CLOSE_REASONS.DELETED) messages.show('deleted', 'This session was deleted. Edits are no longer saved.')
    else if (reason === CLOSE_REASONS.REVOKED) messages.show('revoked', 'Your access to this session was withdrawn. Edits are no longer saved.')
    else if (reason === CLOSE_REASONS.EXPIRED) messages.show('expired', 'Your invitation to this session has expired. Edits are no longer saved.')
    else return
    view.dispatch({ effects: editable.reconfigure(EditorView.editable.of(false)) })
  })
  view.focus()
}
