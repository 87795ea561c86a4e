// What every peer server script shares with ../start.js: the port it is told to use, and the line it
// prints once it accepts connections. Peers listen on loopback only.

export const HOST = '127.0.0.1'
export const READY_PREFIX = 'peer ready at '

/** The port start.js chose (PORT), validated. */
export function portFromEnv () {
  const port = Number(process.env.PORT)
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`PORT must be a TCP port, got ${JSON.stringify(process.env.PORT)}`)
  return port
}

/** Tells start.js the server is ready, and where. @param {string} url */
export function announce (url) {
  process.stdout.write(`${READY_PREFIX}${url}\n`)
}

/**
 * Runs `close` on SIGINT or SIGTERM, then exits.
 * @param {() => Promise<unknown> | unknown} close
 */
export function closeOnSignals (close) {
  const stop = async () => {
    await close()
    process.exit(0)
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}
