// The join token of an invite link (`/s/:id#token=…`). A token names its holder, so it is taken
// out of the address bar once read: a copied address must not hand someone else this identity. It
// is kept in sessionStorage, which a reload of this tab keeps and other tabs do not see.

/** @param {string} id the session */
const storageKey = id => `tandem:token:${id}`

/**
 * The token of the invite link this tab opened for session `id`, or undefined. Removes it from the
 * address without a navigation (other fragment parameters stay).
 * @param {string} id
 * @returns {string | undefined}
 */
export function takeInviteToken (id) {
  const params = new URLSearchParams(window.location.hash.slice(1))
  const token = params.get('token')
  if (token === null) return stored(id)
  params.delete('token')
  const rest = params.toString()
  const { pathname, search } = window.location
  window.history.replaceState(window.history.state, '', `${pathname}${search}${rest ? `#${rest}` : ''}`)
  try {
    sessionStorage.setItem(storageKey(id), token)
  } catch {
    // Storage refused (private mode, a quota): the token lasts until the page closes.
  }
  return token || undefined
}

/** @param {string} id */
function stored (id) {
  try {
    return sessionStorage.getItem(storageKey(id)) || undefined
  } catch {
    return undefined
  }
}
