import { atEnd } from './at-end.js'
import * as Y from 'yjs'
import { SocketIOProvider } from '../../client/src/provider.js'
import { TEXT_NAME } from '../../isomorphic/events.js'

/** @type {Set<{ destroy: () => void }>} documents not destroyed yet */
const open = new Set()
// A provider left connected by a failed test would keep reconnecting, and the file would never
// finish (npm test does not force an exit): whatever is still open is destroyed at its end.
atEnd(() => { for (const doc of open) doc.destroy() })

/**
 * A Y.Doc connected through a real SocketIOProvider, with every event it emitted recorded in order.
 * @param {string} url
 * @param {string} docId
 * @param {import('../../client/src/provider-options.js').ProviderOptions} [options]
 */
export function openDoc (url, docId, options = {}) {
  const ydoc = new Y.Doc()
  // Connect only once the listeners are on, so that the first `connecting` is recorded too.
  const provider = new SocketIOProvider(url, docId, ydoc, { ...options, connect: false })
  const events = {
    /** @type {string[]} */ status: [],
    /** @type {boolean[]} */ sync: [],
    /** @type {number[]} */ unsyncedChanges: [],
    /** @type {import('../../client/src/provider.js').Refusal[]} */ refused: [],
    /** @type {string[]} */ closed: []
  }
  provider.on('status', ({ status }) => events.status.push(status))
  provider.on('sync', synced => events.sync.push(synced))
  provider.on('unsyncedChanges', ({ number }) => events.unsyncedChanges.push(number))
  provider.on('refused', refusal => events.refused.push(refusal))
  provider.on('closed', ({ reason }) => events.closed.push(reason))
  if (options.connect !== false) provider.connect()
  const ytext = ydoc.getText(TEXT_NAME)
  const doc = {
    ydoc,
    provider,
    events,
    ytext,
    text: () => ytext.toString(),
    /** @param {string} text */
    append: (text) => ytext.insert(ytext.length, text),
    /** Connected and holding nothing the server has not stored. */
    settled: () => provider.status === 'connected' && provider.unsyncedChanges === 0,
    destroy () {
      open.delete(doc)
      provider.destroy()
      ydoc.destroy()
    }
  }
  open.add(doc)
  return doc
}
