import { h } from './dom.js'
import { safeColor } from './user.js'

/**
 * A stylesheet colouring the remote selections y-monaco draws: it marks them with the classes
 * `yRemoteSelection-<clientID>` and `yRemoteSelectionHead-<clientID>` and leaves the colours to the
 * page. Colours go through `safeColor`, so a remote state cannot inject CSS.
 * @param {import('y-protocols/awareness').Awareness} awareness
 * @returns {HTMLStyleElement}
 */
export function remoteCursorStyles (awareness) {
  const sheet = /** @type {HTMLStyleElement} */ (h('style'))
  const render = () => {
    const rules = []
    for (const [clientId, state] of awareness.getStates()) {
      if (clientId === awareness.clientID || !Number.isInteger(clientId)) continue
      const color = safeColor(state.user?.color)
      rules.push(
        `.yRemoteSelection-${clientId} { background-color: ${color}33; }`,
        `.yRemoteSelectionHead-${clientId} { position: absolute; height: 100%; border-left: 2px solid ${color}; }`
      )
    }
    sheet.textContent = rules.join('\n')
  }
  awareness.on('change', render)
  render()
  return sheet
}
