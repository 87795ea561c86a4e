import { AppError } from '../errors.js'
import { originAllowed, originRefusal } from '../http/origins.js'
/** @import { IncomingMessage } from 'node:http' */
/** @import { Config } from '../config.js' */

/**
 * Who may open a Socket.IO connection (io.use): a browser on an origin `CORS_ORIGIN` allows,
 * `maxConnectionsPerIp` open per IP here, `connectionsPerMinute` new per IP cluster-wide, and with
 * auth a valid handshake token. A refusal reaches the client as `connect_error` with
 * `data: { code, message }`.
 * @param {object} deps @param {Config} deps.config @param {import('../limits/limits.js').Limits} deps.limits
 * @param {import('../http/origins.js').AllowedOrigins} deps.corsOrigin the parsed `CORS_ORIGIN`
 * @param {import('../auth/access.js').Access} deps.access @param {import('../audit.js').Audit} deps.audit
 * @param {(req: IncomingMessage) => string} deps.clientIpOf
 * @param {PendingConnections} [deps.pendingConnections] told that a connection sent its CONNECT
 * @returns {(socket: import('socket.io').Socket, next: (err?: Error) => void) => void}
 */
export function admission ({ config, corsOrigin, limits, access, clientIpOf, audit, pendingConnections }) {
  /** @type {Map<string, number>} open connections per IP */
  const open = new Map()

  /** @param {string} ip */
  const release = (ip) => {
    const count = (open.get(ip) ?? 1) - 1
    if (count === 0) open.delete(ip)
    else open.set(ip, count)
  }

  /** When the transport closes, or admission fails; once. @param {string} ip */
  const freeOnce = (ip) => {
    let seated = true
    return () => {
      if (seated) release(ip)
      seated = false
    }
  }

  /**
   * @param {string} ip @param {(err?: Error) => void} next @param {unknown} err
   * @param {object} [fields] more for the audit line
   */
  const refuse = (ip, next, err, fields) => {
    const body = err instanceof AppError ? err : new AppError('INTERNAL', 'connection refused')
    audit.refusedFrom('socket.connect', { ip, code: body.code, reason: body.message, ...fields })
    next(Object.assign(new Error(body.message), { data: { code: body.code, message: body.message, details: body.details } }))
  }

  return (socket, next) => {
    pendingConnections?.connected(socket.conn)
    const ip = clientIpOf(socket.request)
    const { origin, host } = socket.request.headers
    if (!originAllowed(corsOrigin, origin, host)) {
      refuse(ip, next, new AppError('FORBIDDEN', originRefusal(String(origin))), { origin, corsOrigin: config.corsOrigin })
      return
    }
    // The seat is taken before the awaits below, so a burst of connections cannot all pass the check.
    if (config.maxConnectionsPerIp !== 0 && (open.get(ip) ?? 0) >= config.maxConnectionsPerIp) {
      refuse(ip, next, new AppError('RATE_LIMITED', `at most ${config.maxConnectionsPerIp} open connections per address`))
      return
    }
    open.set(ip, (open.get(ip) ?? 0) + 1)
    // Freed when the transport closes, which also covers a client gone before admission ends (no
    // `disconnect` then). `on`, not `once`: `once` adds a wrapper per connection.
    const free = freeOnce(ip)
    socket.conn.on('close', free)
    admit(socket, ip).then(() => next(), (err) => {
      free()
      refuse(ip, next, err)
    })
  }

  /** @param {import('socket.io').Socket} socket @param {string} ip */
  async function admit (socket, ip) {
    await limits.connections.take(ip)
    if (access.enabled) await access.verifyHandshake(socket.handshake.auth?.token)
  }
}

/**
 * Engine.IO connections without Socket.IO's CONNECT yet: the limits above never see them, and
 * Socket.IO keeps each for `connectTimeout`. At most `maxConnectionsPerIp` per address wait at once.
 * @param {import('socket.io').Server} io @param {object} deps @param {Config} deps.config
 * @param {(req: IncomingMessage) => string} deps.clientIpOf @param {import('../audit.js').Audit} deps.audit
 */
export function watchPendingConnections (io, { config, clientIpOf, audit }) {
  /** @type {Map<string, number>} connections waiting for their CONNECT, per IP */
  const waiting = new Map()
  /** @type {WeakMap<object, string>} the IP of each connection still waiting */
  const ipOf = new WeakMap()

  /** Its CONNECT came, or it closed. @param {object} conn */
  const stopWaiting = (conn) => {
    const ip = ipOf.get(conn)
    if (ip === undefined) return
    ipOf.delete(conn)
    const count = (waiting.get(ip) ?? 1) - 1
    if (count === 0) waiting.delete(ip)
    else waiting.set(ip, count)
  }

  /** @this {object} the Engine.IO connection */
  function onClose () { stopWaiting(this) }

  io.engine.on('connection', (/** @type {any} */ conn) => {
    if (config.maxConnectionsPerIp === 0) return
    const ip = clientIpOf(conn.request)
    if ((waiting.get(ip) ?? 0) >= config.maxConnectionsPerIp) {
      audit.refusedFrom('socket.connect', { ip, code: 'RATE_LIMITED', reason: `at most ${config.maxConnectionsPerIp} connections per address waiting for a Socket.IO CONNECT` })
      conn.close()
      return
    }
    waiting.set(ip, (waiting.get(ip) ?? 0) + 1)
    ipOf.set(conn, ip)
    conn.once('close', onClose)
  })
  return { connected: stopWaiting }
}

/** @typedef {ReturnType<typeof watchPendingConnections>} PendingConnections */
