import pino from 'pino'

/**
 * The root logger; modules take `logger.child({...})` carrying worker, socket and document.
 * @param {{ logLevel: string }} config
 */
export function createLogger (config) {
  return pino({
    level: config.logLevel,
    base: { pid: process.pid, worker: process.env.NODE_APP_INSTANCE ?? '0' }
  })
}
