import { h } from './dom.js'

/**
 * The address to send to someone so they join this session, with a button that copies it.
 * @param {string} url
 * @returns {HTMLElement}
 */
export function shareLink (url) {
  const field = /** @type {HTMLInputElement} */ (h('input', { class: 'share-url', readonly: '', 'aria-label': 'Share link' }))
  field.value = url
  field.addEventListener('focus', () => field.select())
  const button = h('button', { type: 'button' }, ['Copy link'])
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(url)
      button.textContent = 'Copied'
    } catch {
      // The clipboard needs a secure context and permission; leave the link selected to copy by hand.
      field.select()
    }
    setTimeout(() => { button.textContent = 'Copy link' }, 1500)
  })
  return h('span', { class: 'share' }, [field, button])
}
