// Connections turned away before any handler sees them (a refused handshake, a frame Tandem's parser
// cannot decode: a client on Socket.IO's default parser sees only `transport close`). Otherwise
// nothing is logged on either side; here one line per connection says why.

/** The same parser, recording decode failures. @param {{ Encoder: any, Decoder: any }} parser */
export function watchedParser (parser) {
  /** @type {Error | null} */
  let failure = null
  class Decoder extends parser.Decoder {
    /** @param {unknown} frame */
    add (frame) {
      try {
        super.add(frame)
      } catch (err) {
        failure = /** @type {Error} */ (err)
        throw err
      }
    }
  }
  return {
    parser: { Encoder: parser.Encoder, Decoder },
    takeFailure () {
      const taken = failure
      failure = null
      return taken
    }
  }
}

/**
 * @param {import('socket.io').Server} io
 * @param {ReturnType<typeof watchedParser>} watched the parser `io` was created with
 * @param {import('pino').Logger} logger
 */
export function logRefusedConnections (io, watched, logger) {
  io.engine.on('connection_error', (/** @type {{ req?: import('node:http').IncomingMessage, code: number, message: string, context?: unknown }} */ err) => {
    logger.warn({ address: err.req?.socket?.remoteAddress, url: err.req?.url?.split('?')[0], code: err.code, reason: err.message, context: err.context }, 'connection refused')
  })
  /** Connections whose refused frame was logged: one line per connection. @type {WeakSet<object>} */
  const logged = new WeakSet()
  /** Socket.IO's 'data' listener, added first, has decoded the frame (or failed) by now. @this {any} */
  function afterData () {
    const failure = watched.takeFailure()
    if (!failure || logged.has(this)) return
    logged.add(this)
    logger.warn({
      address: this.remoteAddress,
      transport: this.transport?.name,
      reason: `a frame does not decode with Tandem's parser (${failure.message}): the client must use isomorphic/parser.js, not Socket.IO's default parser`
    }, 'connection refused')
  }
  // One listener for every connection (Engine.IO calls it with the connection as `this`).
  io.engine.on('connection', (/** @type {any} */ conn) => conn.on('data', afterData))
}
