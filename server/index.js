import { createServer } from './app.js'
import { ConfigError, loadConfig, usesRedis } from './config.js'
import { createLogger } from './logger.js'

// The process around the server: reads the environment, listens, tells PM2 it is ready, and shuts
// down cleanly on SIGINT/SIGTERM within `shutdownTimeoutMs`.

let config
try {
  config = loadConfig(process.env)
  // PM2 cluster workers share one port and one balancer: without Redis each would hold its own
  // documents (and fight over one LevelDB directory).
  if (process.env.exec_mode === 'cluster_mode' && !usesRedis(config)) {
    throw new ConfigError('a PM2 cluster needs REDIS_URL (or REDIS_CLUSTER_NODES): workers share documents through Redis')
  }
} catch (err) {
  if (!(err instanceof ConfigError)) throw err
  process.stderr.write(`tandem: ${err.message}\n`)
  process.exit(2)
}

const logger = createLogger(config)
const server = await createServer(config, { logger })
const { url, port, host } = await server.listen()
logger.info({ port, host, url, dataDir: config.dataDir }, 'listening')
process.send?.('ready')

for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
  process.once(signal, () => shutdown(signal))
}

/** @param {string} signal */
async function shutdown (signal) {
  logger.info({ signal }, 'shutting down')
  const timer = setTimeout(() => {
    logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timed out')
    process.exit(1)
  }, config.shutdownTimeoutMs).unref()
  try {
    await server.close()
    clearTimeout(timer)
    logger.info('stopped')
    process.exit(0)
  } catch (err) {
    logger.error({ err }, 'shutdown failed')
    process.exit(1)
  }
}
