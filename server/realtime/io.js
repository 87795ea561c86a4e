import { Server } from 'socket.io'
import { registerDocHandlers } from './doc-handlers.js'

// Headroom over `maxUpdateBytes` for the packet around an update, so an update just over the limit
// gets a TOO_LARGE ACK; a frame larger still closes the connection at the transport. Long-polling
// carries binary as base64 (4/3 the size), which the frame limit allows for too.
const FRAME_OVERHEAD_BYTES = 64 * 1024

/** @param {number} maxUpdateBytes */
export const maxFrameBytes = maxUpdateBytes => Math.ceil(maxUpdateBytes * 4 / 3) + FRAME_OVERHEAD_BYTES

/**
 * The Socket.IO server. Its adapter relays packets between processes and nothing more: documents and
 * sessions live in the stores, never in the adapter.
 * @param {import('node:http').Server} httpServer
 * @param {import('./doc-handlers.js').RealtimeContext & { corsOrigin: string | string[] }} ctx
 */
export function createIo (httpServer, ctx) {
  const { config, logger } = ctx
  /** @type {Server<import('../protocol.js').ClientToServerEvents, import('../protocol.js').ServerToClientEvents>} */
  const io = new Server(httpServer, {
    serveClient: false,
    maxHttpBufferSize: maxFrameBytes(config.maxUpdateBytes),
    cors: { origin: ctx.corsOrigin }
  })
  io.on('connection', (socket) => {
    const address = socket.handshake.address
    logger.info({ socket: socket.id, address, transport: socket.conn.transport.name }, 'connected')
    socket.on('disconnect', (reason) => {
      logger.info({ socket: socket.id, reason }, 'disconnected')
    })
    registerDocHandlers(/** @type {any} */ (socket), ctx)
  })
  return io
}
