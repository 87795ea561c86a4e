import { Server } from 'socket.io'
import { corsOptionsOf, hostAllowed, LOCAL_ONLY_REFUSAL } from '../http/origins.js'
import { PARSER } from '../../isomorphic/parser.js'
import { answerOkDirectly } from './direct-ack.js'
import { docHandlers } from './doc-handlers.js'
import { logRefusedConnections, watchedParser } from './refused-connections.js'

// Headroom for the packet around an update, so one just over `maxUpdateBytes` gets a TOO_LARGE ACK
// rather than a closed connection; long-polling's base64 (4/3) is allowed for too.
const FRAME_OVERHEAD_BYTES = 64 * 1024

/** @param {number} maxUpdateBytes */
export const maxFrameBytes = maxUpdateBytes => Math.ceil(maxUpdateBytes * 4 / 3) + FRAME_OVERHEAD_BYTES

/**
 * The adapter relays packets between processes and nothing more: documents live in the stores.
 * @param {import('node:http').Server} httpServer @param {object} options
 * @param {import('../config.js').Config} options.config
 * @param {import('../http/origins.js').AllowedOrigins} options.corsOrigin
 * @param {boolean} [options.localOnly] answer only handshakes that name this machine (`hostAllowed`)
 * @param {any} [options.adapter] absent = the in-memory adapter of a single process
 * @param {import('pino').Logger} [options.logger] where refused connections are reported
 */
export function createIo (httpServer, { config, corsOrigin, localOnly = false, adapter, logger }) {
  const watched = watchedParser(PARSER)
  /** @type {Server<import('../../isomorphic/events.js').ClientToServerEvents, import('../../isomorphic/events.js').ServerToClientEvents>} */
  const io = new Server(httpServer, {
    serveClient: false,
    parser: watched.parser,
    // Without sticky sessions (PM2 has none) polling requests land on different workers: a cluster
    // serves WebSocket only.
    transports: /** @type {import('socket.io').ServerOptions['transports']} */ (config.transports),
    maxHttpBufferSize: maxFrameBytes(config.maxUpdateBytes),
    cors: corsOptionsOf(corsOrigin),
    // The Origin is checked at CONNECT (admission.js), where a refusal reaches the page with its
    // reason; refused here, a browser would see only `websocket error`.
    allowRequest: (req, callback) => {
      const allowed = hostAllowed(localOnly, req.headers.host)
      callback(allowed ? null : LOCAL_ONLY_REFUSAL, allowed)
    },
    adapter
  })
  if (logger) logRefusedConnections(io, watched, logger)
  return io
}

/** @param {import('socket.io').Server} io @param {import('./doc-handlers.js').RealtimeContext} ctx */
export function handleConnections (io, ctx) {
  const { logger, relayOptions } = ctx
  const register = docHandlers(ctx)
  /** @this {import('socket.io').Socket} @param {string} reason */
  function onDisconnect (reason) {
    logger.info({ socket: this.id, reason }, 'disconnected')
  }
  io.on('connection', (socket) => {
    const address = socket.handshake.address
    logger.info({ socket: socket.id, address, transport: socket.conn.transport.name }, 'connected')
    socket.on('disconnect', onDisconnect)
    answerOkDirectly(socket, relayOptions.writeFrame)
    register(socket)
  })
}
