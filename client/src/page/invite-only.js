import { h } from './dom.js'

/**
 * The page at / while auth is on. Without the API key the page can neither list nor create
 * sessions, so it says how people get in instead: an invite link carrying their own join token,
 * minted by the backend (or by an operator with `npm run invite`).
 * @param {HTMLElement} root
 */
export function renderInviteOnly (root) {
  const link = /** @type {HTMLInputElement} */ (h('input', { name: 'invite', required: '', placeholder: `${window.location.origin}/s/…#token=…`, 'aria-label': 'Invite link' }))
  const error = h('p', { class: 'error', role: 'alert' })
  const form = h('form', { class: 'create' }, [link, h('button', { type: 'submit' }, ['Open']), error])
  form.addEventListener('submit', (event) => {
    event.preventDefault()
    const target = inviteTarget(link.value)
    if (target) window.location.assign(target)
    else error.textContent = 'That is not an invite link to this server: it looks like /s/<session>#token=…'
  })
  root.replaceChildren(
    h('header', { class: 'bar' }, [h('a', { href: '/', class: 'home' }, ['Tandem'])]),
    h('main', { class: 'home-page invite-only' }, [
      h('h2', {}, ['Sessions here are by invitation']),
      h('p', {}, ['Authentication is on for this server. Each person opens a session with their own invite link, ' +
        'which carries a join token naming them and their role (editor or viewer). Sessions are created, ' +
        'listed and shared by an application holding the API key, not from this page.']),
      h('h3', {}, ['Have a link?']),
      h('p', {}, ['Open it, or paste it here:']),
      form,
      h('h3', {}, ['Running this server?']),
      h('p', {}, ['Create a session and mint a link through the REST API with the API key, or from a checkout:']),
      h('pre', {}, ['API_KEY=… TANDEM_URL=', window.location.origin, ' npm run invite -- <session id> <user> editor']),
      h('p', {}, ['The "Invite links" section of docs/API.md shows both.'])
    ])
  )
}

/**
 * The same-origin editor path of a pasted invite link, or null.
 * @param {string} text
 */
function inviteTarget (text) {
  try {
    const url = new URL(text.trim(), window.location.origin)
    if (url.origin !== window.location.origin || !/^\/s\/[a-z0-9]{1,64}\/?$/.test(url.pathname)) return null
    return url.pathname + url.hash
  } catch {
    return null
  }
}
