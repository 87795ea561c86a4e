// Who this page is to the others: a name and a colour, published as the awareness `user` field that
// y-codemirror.next labels cursors with. A guest name and colour are drawn per tab and kept in
// sessionStorage (a reload keeps them, another tab draws its own), so each tab's cursor is told
// apart from this one's. A name the user types is kept in localStorage, for every tab and later visits.

import { AWARENESS_USER, awarenessUserProblem } from '../../../isomorphic/awareness-user.js'

/** localStorage: the user the person chose (name, and the colour of the tab they chose it in). */
const CHOSEN_KEY = 'tandem:user'
/** sessionStorage: this tab's guest. */
const GUEST_KEY = 'tandem:guest'
/** Drawn for a remote user whose colour is not plain hex. */
const FALLBACK_COLOR = '#808080'
// Earlier versions kept a drawn guest under CHOSEN_KEY, shared by every tab: not a choice.
const GUEST_NAME = /^Guest \d{4}$/

// Dark enough for the white label text y-codemirror.next draws on them.
const COLORS = ['#d33682', '#268bd2', '#2aa198', '#859900', '#b58900', '#cb4b16', '#6c71c4', '#dc322f']

/** @typedef {{ name: string, color: string }} User */

/** The chosen user if there is one, else this tab's guest. @returns {User} */
export function loadUser () {
  const chosen = read(() => localStorage, CHOSEN_KEY)
  if (chosen && !GUEST_NAME.test(chosen.name)) return chosen
  const guest = read(() => sessionStorage, GUEST_KEY) ?? {
    name: `Guest ${Math.floor(1000 + Math.random() * 9000)}`,
    color: COLORS[Math.floor(Math.random() * COLORS.length)]
  }
  write(() => sessionStorage, GUEST_KEY, guest)
  return guest
}

/** Keeps a name the user chose, for every tab. @param {User} user */
export function saveUser (user) {
  write(() => localStorage, CHOSEN_KEY, user)
}

// Storage is passed as a getter: reading `localStorage` itself throws where the browser blocks it.

/** @param {() => Storage} storage @param {string} key @returns {User | null} */
function read (storage, key) {
  try {
    const stored = JSON.parse(storage().getItem(key) ?? 'null')
    return typeof stored?.name === 'string' && COLORS.includes(stored.color) ? stored : null
  } catch {
    // Unreadable or disabled storage: start afresh.
    return null
  }
}

/** @param {() => Storage} storage @param {string} key @param {User} user */
function write (storage, key, user) {
  try {
    storage().setItem(key, JSON.stringify(user))
  } catch {
    // Private mode may refuse; the user then lasts until the page closes.
  }
}

/**
 * The awareness `user` field. `colorLight` (the colour at 20% opacity) tints remote selections.
 * @param {User} user
 */
export function awarenessUser ({ name, color }) {
  return { name, color, colorLight: `${color}33` }
}

/**
 * Keeps the remote states this page draws safe: y-codemirror.next puts `user.color` and
 * `user.colorLight` into a style attribute, so a colour that is not plain hex (say, one ending in
 * `; position: fixed; inset: 0`) would restyle the page. The server refuses such states; this holds
 * even against one that does not. A bad `user` is replaced in place, before the editor reads it:
 * call this before the editor's awareness listeners are added.
 * @param {import('y-protocols/awareness').Awareness} awareness
 */
export function guardRemoteUsers (awareness) {
  const guard = () => {
    for (const [clientId, state] of awareness.getStates()) {
      if (clientId !== awareness.clientID && state.user !== undefined && awarenessUserProblem(state.user) !== null) {
        state.user = safeUser(state.user)
      }
    }
  }
  awareness.on('change', guard)
  awareness.on('update', guard)
  guard()
}

/**
 * A colour that is safe to draw with: `color` if it is `#rrggbb` (or `#rgb`), else a neutral grey.
 * @param {unknown} color
 */
export function safeColor (color) {
  return typeof color === 'string' && AWARENESS_USER.COLOR_PATTERN.test(color) ? color : FALLBACK_COLOR
}

/** @param {unknown} user @returns {User & { colorLight: string }} */
function safeUser (user) {
  const { name, color } = /** @type {Record<string, unknown>} */ (typeof user === 'object' && user !== null ? user : {})
  const shown = typeof name === 'string' ? name.replace(new RegExp(AWARENESS_USER.FORBIDDEN_NAME_CHARACTERS, 'gu'), '') : ''
  return awarenessUser({ name: shown.slice(0, AWARENESS_USER.MAX_NAME_LENGTH) || 'Anonymous', color: safeColor(color) })
}

/**
 * The user a join token names (its `sub` claim), or null for no token or one that does not decode.
 * Read for display only: the server checks the signature, the page cannot and need not.
 * @param {string | undefined} token
 * @returns {string | null}
 */
export function tokenUser (token) {
  const { sub } = claimsOf(token)
  return typeof sub === 'string' && sub !== '' ? sub : null
}

/**
 * Whether a join token lets its holder change the document: no token (auth off) or an editor's.
 * For display only, as `tokenUser`; the server refuses a viewer whatever the page shows.
 * @param {string | undefined} token
 */
export function mayEdit (token) {
  return token === undefined || claimsOf(token).role === 'editor'
}

/** A colour of its own for each name, the same on every page. @param {string | null} name */
export function colorOfName (name) {
  if (name === null) return FALLBACK_COLOR
  let hash = 0
  for (let i = 0; i < name.length; i++) hash = (hash * 31 + name.charCodeAt(i)) >>> 0
  return COLORS[hash % COLORS.length]
}

/** @param {string | undefined} token @returns {Record<string, unknown>} */
function claimsOf (token) {
  try {
    const payload = token?.split('.')[1]
    if (!payload) return {}
    const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/'))
    const claims = JSON.parse(new TextDecoder().decode(Uint8Array.from(json, c => c.charCodeAt(0))))
    return typeof claims === 'object' && claims !== null ? claims : {}
  } catch {
    return {}
  }
}
