import { createSession, health, listSessions } from './api.js'
import { h } from './dom.js'
import { renderInviteOnly } from './invite-only.js'
import { LANGUAGES } from './languages.js'

/**
 * The page at /: create a session, or open one of the existing ones (newest first, paged). With auth
 * on the page holds no API key, so it explains invite links instead.
 * @param {HTMLElement} root
 */
export async function renderSessionList (root) {
  if ((await health()).auth === 'on') {
    renderInviteOnly(root)
    return
  }
  const name = /** @type {HTMLInputElement} */ (h('input', { name: 'name', required: '', maxlength: '200', placeholder: 'main.rs' }))
  // Left at "from the name", the server infers the language from the extension (main.rs: rust).
  const language = /** @type {HTMLSelectElement} */ (h('select', { name: 'language' }, [
    h('option', { value: '' }, ['from the name']),
    ...LANGUAGES.map(id => h('option', { value: id }, [id]))
  ]))
  const error = h('p', { class: 'error', role: 'alert' })
  const form = h('form', { class: 'create' }, [
    h('label', {}, ['Name ', name]),
    h('label', {}, ['Language ', language]),
    h('button', { type: 'submit' }, ['Create session']),
    error
  ])
  form.addEventListener('submit', async (event) => {
    event.preventDefault()
    error.textContent = ''
    try {
      const session = await createSession({ name: name.value, ...(language.value ? { language: language.value } : {}) })
      window.location.assign(`/s/${session.id}`)
    } catch (err) {
      error.textContent = /** @type {Error} */ (err).message
    }
  })

  const list = h('ul', { class: 'sessions' })
  const more = h('button', { type: 'button', hidden: '' }, ['More'])
  /** @type {string | undefined} */
  let cursor
  const loadPage = async () => {
    try {
      const page = await listSessions(cursor)
      if (page.sessions.length === 0 && !cursor) list.append(h('li', { class: 'empty' }, ['No sessions yet.']))
      list.append(...page.sessions.map(session => h('li', {}, [
        h('a', { href: `/s/${session.id}` }, [session.name]),
        h('span', { class: 'language' }, [session.language]),
        h('span', { class: 'editors' }, [session.editors === 1 ? '1 editor' : `${session.editors} editors`])
      ])))
      cursor = page.nextCursor ?? undefined
      more.hidden = !cursor
    } catch (err) {
      error.textContent = `Could not list sessions: ${/** @type {Error} */ (err).message}`
    }
  }
  more.addEventListener('click', loadPage)

  root.replaceChildren(
    h('header', { class: 'bar' }, [h('a', { href: '/', class: 'home' }, ['Tandem'])]),
    h('main', { class: 'home-page' }, [
      h('h2', {}, ['New session']),
      form,
      h('h2', {}, ['Sessions']),
      list,
      more
    ])
  )
  loadPage()
}
