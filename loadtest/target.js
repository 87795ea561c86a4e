import { randomBytes } from 'node:crypto'
import * as Y from 'yjs'
import { TEXT_NAME } from '../isomorphic/events.js'
import { mapLimit } from './api.js'
import { checkAgreement, checkConvergence } from './convergence.js'
import { scrape } from './server-stats.js'

// The system under test as a level sees it, besides the protocol its editors speak: where a level's
// rooms come from, the server's own figures, and what convergence is checked against. Tandem creates
// a session per room through its REST API, seeded with the room's text, serves /metrics, and serves
// each document's text; a peer system (Hocuspocus, y-websocket, a relay) has none of these, so its
// rooms are names, every editor starts from the same seed update applied locally, and convergence
// means every editor of a room holds the same text.

const REST_CONCURRENCY = 8

/** @typedef {import('./worker.js').Room} Room */
/** @typedef {{ name: string, text: string, size: number }} RoomSpec a room's label, starting text and editors */

/**
 * @typedef {object} Target
 * @property {string} protocol name from protocols/index.js
 * @property {string[]} urls what the protocol connects to: one server process, or several sharing the
 *   documents (editors are spread over them by slot, spread.js)
 * @property {(rooms: RoomSpec[], seedClient: number) => Promise<Room[]>} openRooms creates a level's rooms
 * @property {(rooms: Room[]) => Promise<void>} closeRooms
 * @property {() => Promise<import('./server-stats.js').Scrape | null>} scrape the server's /metrics, or null
 * @property {(pool: import('./pool.js').WorkerPool, rooms: Room[], plan: import('./plan.js').RoomPlan) => Promise<import('./convergence.js').Convergence>} checkConvergence
 */

/**
 * @param {import('./api.js').TandemApi} api
 * @param {{ mintTokens: boolean, urls?: string[] }} options `mintTokens`: mint a join token per room (a
 *   server with auth on, the API key at hand); `urls`: the processes editors connect to (default the API's)
 * @returns {Target}
 */
export function tandemTarget (api, { mintTokens, urls = [api.url] }) {
  return {
    protocol: 'tandem',
    urls,
    async openRooms (rooms) {
      const sessions = await mapLimit(rooms, REST_CONCURRENCY, ({ name, text, size }) => api.createSession({ name, content: text, maxEditors: size }))
      return mapLimit(sessions, REST_CONCURRENCY, async (session, room) => ({
        id: session.id,
        seed: null,
        token: mintTokens ? (await api.mintToken(session.id, { user: `loadtest-room-${room + 1}`, role: 'editor' })).token : null
      }))
    },
    async closeRooms (rooms) {
      await mapLimit(rooms, REST_CONCURRENCY, room => api.deleteSession(room.id).catch(() => {}))
    },
    scrape: () => scrape(api),
    checkConvergence: (pool, rooms, plan) => checkConvergence(api, pool, rooms, plan)
  }
}

/**
 * @param {string} protocol
 * @param {string} url
 * @returns {Target}
 */
export function peerTarget (protocol, url) {
  return {
    protocol,
    urls: [url],
    async openRooms (rooms, seedClient) {
      const prefix = `loadtest${randomBytes(4).toString('hex')}`
      return rooms.map(({ text }, i) => ({ id: `${prefix}r${i + 1}`, seed: seedUpdate(text, seedClient), token: null }))
    },
    async closeRooms () {},
    scrape: async () => null,
    checkConvergence: (pool, rooms, plan) => checkAgreement(pool, rooms, plan)
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
