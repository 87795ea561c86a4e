import { h } from './dom.js'

/**
 * A strip of messages for the user: refusals from the server, a deleted session. One message per
 * key, so a refusal retried with backoff shows once rather than once per attempt.
 */
export function notices () {
  const element = h('div', { class: 'notices', 'aria-live': 'polite' })
  /** @type {Map<string, HTMLElement>} */
  const shown = new Map()
  return {
    element,
    /** @param {string} key @param {string} text */
    show (key, text) {
      const notice = shown.get(key) ?? h('p', { class: 'notice' })
      notice.textContent = text
      shown.set(key, notice)
      element.append(notice)
    },
    /** @param {string} key */
    clear (key) {
      shown.get(key)?.remove()
      shown.delete(key)
    }
  }
}
