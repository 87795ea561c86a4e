import { io } from 'socket.io-client'
import { PARSER } from '../../isomorphic/parser.js'

/**
 * @typedef {import('socket.io-client').Socket<
 *   import('../../isomorphic/events.js').ServerToClientEvents,
 *   import('../../isomorphic/events.js').ClientToServerEvents
 * >} TandemSocket
 */

/**
 * @typedef {object} SocketOptions
 * @property {string | (() => Promise<string> | string)} [token] sent in the handshake as
 *   `auth: { token }`; a function is called before every (re)connect, so each handshake carries a
 *   fresh token
 * @property {string[]} [transports] Engine.IO transports, in order of preference. Default `['websocket']`.
 * @property {boolean} [autoConnect] connect at once. Default true.
 */

/**
 * Opens one Socket.IO connection to a Tandem server. Pass it as the `socket` option of several
 * providers to carry all their documents over it (several files open in one editor).
 * `forceNew` keeps it apart from socket.io-client's own per-URL cache, which would otherwise hand
 * the same socket to unrelated callers, so that closing one would close the other.
 * @param {string} serverUrl
 * @param {SocketOptions & Partial<import('socket.io-client').ManagerOptions>} [options] other
 *   socket.io-client options (reconnection delays, path, …) pass through
 * @returns {TandemSocket}
 */
export function createSocket (serverUrl, { token, transports = ['websocket'], ...rest } = {}) {
  return io(serverUrl, {
    ...rest,
    transports,
    forceNew: true,
    // The server's parser (one frame per packet); a client on the default parser cannot talk to it.
    parser: PARSER,
    ...(token === undefined ? {} : { auth: handshakeAuth(token) })
  })
}

/**
 * socket.io-client calls a function `auth` before each connection attempt. A token function that
 * fails sends no token: the server refuses the handshake with UNAUTHORIZED, which the caller
 * sees as `connect_error` (and the provider retries with backoff).
 * @param {string | (() => Promise<string> | string)} token
 * @returns {{ token: string } | ((cb: (data: object) => void) => void)}
 */
function handshakeAuth (token) {
  if (typeof token !== 'function') return { token }
  return (cb) => {
    Promise.resolve().then(token).then(fresh => cb({ token: fresh }), () => cb({}))
  }
}

/** @type {WeakMap<object, Set<string>>} */
const claimed = new WeakMap()

/**
 * Reserves `docId` on `socket` for one provider. The server keeps one membership per socket and
 * document, so a second provider for the same document on the same socket would have its joins and
 * leaves undo the first one's.
 * @param {object} socket
 * @param {string} docId
 * @returns {() => void} releases the reservation
 */
export function claimDoc (socket, docId) {
  let docs = claimed.get(socket)
  if (!docs) claimed.set(socket, docs = new Set())
  if (docs.has(docId)) throw new Error(`document ${docId} already has a provider on this socket`)
  docs.add(docId)
  const held = docs
  return () => { held.delete(docId) }
}
