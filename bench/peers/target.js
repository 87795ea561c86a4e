import { randomBytes } from 'node:crypto'
import * as Y from 'yjs'
import { TEXT_NAME } from '../../isomorphic/events.js'
import { checkRooms } from '../../loadtest/convergence.js'

// A peer system as a level sees it (the load test's Target, loadtest/target.js). A peer has no REST API, no
// /metrics and serves no document text: its rooms are names, every editor starts from the same
// seed update applied locally, and convergence means every editor of a room holds the same text.

/**
 * @param {import('./start.js').PeerName} name
 * @param {string} url
 * @returns {import('../../loadtest/target.js').Target}
 */
export function peerTarget (name, url) {
  return {
    protocolModule: new URL(`./clients/${name}.js`, import.meta.url).href,
    urls: [url],
    async openRooms (rooms, seedClient) {
      const prefix = `loadtest${randomBytes(4).toString('hex')}`
      return rooms.map(({ text }, i) => ({ id: `${prefix}r${i + 1}`, seed: seedUpdate(text, seedClient), token: null }))
    },
    async closeRooms () {},
    scrape: async () => null,
    checkConvergence: (pool, rooms, plan) => checkRooms(rooms, async () => {
      const digests = (await pool.all('digests')).flatMap(reply => reply.digests)
      /** @type {Map<number, Set<string>>} */
      const byRoom = new Map()
      for (const { index, digest } of digests) {
        const room = plan[index].room
        if (!byRoom.has(room)) byRoom.set(room, new Set())
        byRoom.get(room)?.add(digest)
      }
      return { diverged: [...byRoom.values()].filter(set => set.size > 1).length, editors: digests.length }
    })
  }
}

/**
 * The room's starting text as one Yjs update from `seedClient`. Every editor of the room applies
 * the same bytes, so they all hold the same items and the server can take them from any of them.
 * @param {string} text
 * @param {number} seedClient
 */
export function seedUpdate (text, seedClient) {
  const doc = new Y.Doc()
  doc.clientID = seedClient
  doc.getText(TEXT_NAME).insert(0, text)
  const update = Y.encodeStateAsUpdate(doc)
  doc.destroy()
  return update
}
