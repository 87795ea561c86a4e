import { h } from './dom.js'

const LABELS = { connecting: 'Connecting…', connected: 'Connected', disconnected: 'Offline' }

/**
 * Connection status and how many edits the server has not stored yet. `data-status` carries the
 * provider's status for styling.
 * @param {import('../provider.js').SocketIOProvider} provider
 * @returns {HTMLElement}
 */
export function statusBadge (provider) {
  const badge = h('span', { id: 'status', class: 'status', role: 'status' })
  const render = () => {
    const unsaved = provider.unsyncedChanges
    badge.dataset.status = provider.status
    badge.textContent = LABELS[provider.status] + (unsaved > 0 && provider.status !== 'connected' ? ` · ${unsaved} unsaved` : '')
  }
  provider.on('status', render)
  provider.on('unsyncedChanges', render)
  render()
  return badge
}
