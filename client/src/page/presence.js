import { h } from './dom.js'
import { safeColor } from './user.js'

/**
 * The list of who has the document open, from awareness: everyone with a `user` field, this
 * browser first. Redrawn on every awareness change; names go in as text, colours only as hex.
 * @param {import('y-protocols/awareness').Awareness} awareness
 * @returns {HTMLElement}
 */
export function presenceList (awareness) {
  const list = h('ul', { class: 'presence', 'aria-label': 'Who is here' })
  const render = () => {
    const entries = [...awareness.getStates()]
      .filter(([, state]) => typeof state.user?.name === 'string')
      .sort(([a], [b]) => Number(b === awareness.clientID) - Number(a === awareness.clientID))
    list.replaceChildren(...entries.map(([clientId, { user }]) => {
      const dot = h('span', { class: 'dot' })
      dot.style.backgroundColor = safeColor(user.color)
      const you = clientId === awareness.clientID ? [h('span', { class: 'you' }, [' (you)'])] : []
      return h('li', {}, [dot, String(user.name), ...you])
    }))
  }
  awareness.on('change', render)
  render()
  return list
}
