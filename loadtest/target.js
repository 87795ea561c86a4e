import { mapLimit } from './api.js'
import { checkConvergence } from './convergence.js'
import { scrape } from './server-stats.js'

// The system under test as a level sees it: the protocol its editors speak, where a level's rooms
// come from, the server's own figures, and what convergence is checked against. Tandem creates a
// session per room through its REST API, seeded with the room's text, serves /metrics, and serves
// each document's text.

const REST_CONCURRENCY = 8

/** @typedef {import('./worker.js').Room} Room */
/** @typedef {{ name: string, text: string, size: number }} RoomSpec a room's label, starting text and editors */

/**
 * @typedef {object} Target
 * @property {string} protocolModule URL of the module whose `protocol` its editors speak (protocols/index.js)
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
    protocolModule: new URL('./protocols/tandem.js', import.meta.url).href,
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
