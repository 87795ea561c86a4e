import { mapLimit } from './api.js'
import { checkConvergence } from './convergence.js'
import { scrape } from './server-stats.js'

// The system under test as a level sees it: the protocol its editors speak, where a level's rooms
// come from, the server's own figures, and what convergence is checked against. Tandem creates a
// session per room through its REST API, seeded with the room's text, serves /metrics, and serves
// each document's text.

const REST_CONCURRENCY = 8
const TANDEM_PROTOCOL = new URL('./protocols/tandem.js', import.meta.url).href

/**
 * The clients a Tandem load can speak through: `socket.io`, the shipped client's socket.io-client
 * socket; `wire`, the same bytes over a bare WebSocket, as the peers' clients are written.
 */
export const TANDEM_CLIENTS = Object.freeze({
  'socket.io': TANDEM_PROTOCOL,
  wire: new URL('./protocols/tandem-wire.js', import.meta.url).href
})
/** @typedef {keyof typeof TANDEM_CLIENTS} TandemClient */

/** @typedef {import('./worker.js').Room} Room */
/** @typedef {{ name: string, text: string, size: number }} RoomSpec a room's label, starting text and editors */

/**
 * @typedef {object} Target
 * @property {string} protocolModule URL of the module whose `protocol` its editors speak (protocols/index.js)
 * @property {string[]} urls what the protocol connects to: one server process, or several (spread.js)
 * @property {import('./spread.js').Placement} [placement] how editors are placed on several processes
 *   (default `editors`: each room spread over them)
 * @property {(rooms: RoomSpec[], seedClient: number) => Promise<Room[]>} openRooms creates a level's rooms
 * @property {(rooms: Room[]) => Promise<void>} closeRooms
 * @property {() => Promise<import('./server-stats.js').Scrape | null>} scrape the server's /metrics, or null
 * @property {(pool: import('./pool.js').WorkerPool, rooms: Room[], plan: import('./plan.js').RoomPlan) => Promise<import('./convergence.js').Convergence>} checkConvergence
 */

/**
 * @param {import('./api.js').TandemApi} api
 * @param {{ mintTokens: boolean, urls?: string[], placement?: import('./spread.js').Placement, client?: TandemClient }} options
 *   `mintTokens`: mint a join token per room (a server with auth on, the API key at hand); `urls`: the
 *   processes editors connect to (default the API's); `placement`: how they are placed on them;
 *   `client`: what the editors speak through (default `socket.io`)
 * @returns {Target}
 */
export function tandemTarget (api, { mintTokens, urls = [api.url], placement = 'editors', client = 'socket.io' }) {
  return {
    protocolModule: TANDEM_CLIENTS[client],
    urls,
    placement,
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
 * Several Tandem servers that share nothing (each its own embedded storage): room `r` is created on
 * server `r mod N` and its editors connect there (placement `rooms`). The server's figures add up
 * every server's /metrics. What W processes cost on a machine, apart from anything they share.
 * @param {import('./api.js').TandemApi[]} apis
 * @returns {Target}
 */
export function separateTarget (apis) {
  /** @type {Map<string, import('./api.js').TandemApi>} the server of each room's session */
  const serverOf = new Map()
  const apiOf = (/** @type {string} */ id) => /** @type {import('./api.js').TandemApi} */ (serverOf.get(id))
  return {
    protocolModule: TANDEM_PROTOCOL,
    urls: apis.map(api => api.url),
    placement: 'rooms',
    async openRooms (rooms) {
      return mapLimit(rooms, REST_CONCURRENCY, async ({ name, text, size }, room) => {
        const api = apis[room % apis.length]
        const session = await api.createSession({ name, content: text, maxEditors: size })
        serverOf.set(session.id, api)
        return { id: session.id, seed: null, token: null }
      })
    },
    async closeRooms (rooms) {
      await mapLimit(rooms, REST_CONCURRENCY, room => apiOf(room.id).deleteSession(room.id).catch(() => {}))
    },
    async scrape () {
      const scrapes = await Promise.all(apis.map(api => scrape(api)))
      if (scrapes.some(one => one === null)) return null
      const every = /** @type {import('./server-stats.js').Scrape[]} */ (scrapes)
      return { at: Math.max(...every.map(one => one.at)), samples: every.flatMap(one => one.samples) }
    },
    checkConvergence: (pool, rooms, plan) =>
      checkConvergence({ content: id => apiOf(id).content(id) }, pool, rooms, plan)
  }
}
