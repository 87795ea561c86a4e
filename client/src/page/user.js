// Who this browser is to the others: a name and a colour, kept in localStorage so they survive a
// reload, and published as the awareness `user` field that y-codemirror.next labels cursors with.

const STORAGE_KEY = 'tandem:user'

// Dark enough for the white label text y-codemirror.next draws on them.
const COLORS = ['#d33682', '#268bd2', '#2aa198', '#859900', '#b58900', '#cb4b16', '#6c71c4', '#dc322f']

/** @typedef {{ name: string, color: string }} User */

/** @returns {User} */
export function loadUser () {
  try {
    const stored = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? 'null')
    if (typeof stored?.name === 'string' && COLORS.includes(stored.color)) return stored
  } catch {
    // Unreadable or disabled storage: start afresh.
  }
  const user = {
    name: `Guest ${Math.floor(1000 + Math.random() * 9000)}`,
    color: COLORS[Math.floor(Math.random() * COLORS.length)]
  }
  saveUser(user)
  return user
}

/** @param {User} user */
export function saveUser (user) {
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(user))
  } catch {
    // Private mode may refuse; the name then lasts until the page closes.
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
 * The user a join token names (its `sub` claim), or null for no token or one that does not decode.
 * Read for display only: the server checks the signature, the page cannot and need not.
 * @param {string | undefined} token
 * @returns {string | null}
 */
export function tokenUser (token) {
  try {
    const payload = token?.split('.')[1]
    if (!payload) return null
    const json = atob(payload.replace(/-/g, '+').replace(/_/g, '/'))
    const { sub } = JSON.parse(new TextDecoder().decode(Uint8Array.from(json, c => c.charCodeAt(0))))
    return typeof sub === 'string' && sub !== '' ? sub : null
  } catch {
    return null
  }
}
