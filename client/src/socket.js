import { io } from 'socket.io-client'
import { PARSER } from '../../isomorphic/parser.js'
import { JoinToken } from './join-token.js'

/**
 * @typedef {import('socket.io-client').Socket<
 *   import('../../isomorphic/events.js').ServerToClientEvents,
 *   import('../../isomorphic/events.js').ClientToServerEvents
 * >} TandemSocket
 */

/**
 * @typedef {object} SocketOptions
 * @property {import('./join-token.js').TokenSource | JoinToken} [token] sent in the handshake as
 *   `auth: { token }`. A function is called only once the server has refused a handshake without a
 *   token (a server with auth off never does), then before every (re)connect, so each handshake
 *   carries a fresh token
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
  const joinToken = token instanceof JoinToken ? token : new JoinToken(token)
  const socket = io(serverUrl, {
    ...rest,
    transports,
    forceNew: true,
    // The server's parser (one frame per packet); a client on the default parser cannot talk to it.
    parser: PARSER,
    ...handshakeAuth(joinToken)
  })
  // The first handshake of a token function carries no token. A server that wants one refuses it:
  // try again at once, with one. Registered before any provider's listener, which then ignores it.
  if (joinToken.renewable) {
    socket.on('connect_error', (/** @type {Error & { data?: { code?: string } }} */ err) => {
      if (!joinToken.askedBy(err.data?.code)) return
      tokenRequests.add(err)
      socket.connect()
    })
  }
  return socket
}

/** Refusals of a handshake that only told a socket to send its token (see createSocket). */
const tokenRequests = new WeakSet()

/**
 * Whether a `connect_error` only asked for the token the handshake did not carry yet: its socket
 * is already connecting again with one, and nothing failed.
 * @param {Error} error
 */
export function isTokenRequest (error) {
  return tokenRequests.has(error)
}

/**
 * socket.io-client calls a function `auth` before each connection attempt. A token function that
 * fails, or has not been asked for yet, sends no token: a server with auth on refuses the handshake
 * with UNAUTHORIZED, which the caller sees as `connect_error` (and the provider retries with backoff).
 * @param {JoinToken} joinToken
 * @returns {{ auth?: { token: string } | ((cb: (data: object) => void) => void) }} the `auth` option, if any
 */
function handshakeAuth (joinToken) {
  const { fixed } = joinToken
  if (!joinToken.renewable) return fixed === undefined ? {} : { auth: { token: fixed } }
  return {
    auth: (cb) => {
      joinToken.get().then(fresh => cb(fresh === undefined ? {} : { token: fresh }), () => cb({}))
    }
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
