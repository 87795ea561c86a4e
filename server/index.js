import { createServer } from './app.js'
import { ConfigError, loadClusterConfig, loadConfig, usesRedis } from './config.js'
import { EXIT_CODES, StartError } from './exit-codes.js'
import { createLogger } from './logger.js'

// The process: environment, listen, PM2's `ready`, and a clean stop on SIGINT/SIGTERM.

/** @type {Readonly<import('./config.js').Config>} */
let config
try {
  config = process.env.exec_mode === 'cluster_mode' ? loadClusterConfig(process.env) : loadConfig(process.env)
} catch (err) {
  if (!(err instanceof ConfigError)) throw err
  process.stderr.write(`tandem: ${err.message}\n`)
  process.exit(EXIT_CODES.CONFIG)
}

const logger = createLogger(config)
const server = await createServer(config, { logger }).catch((err) => {
  if (!(err instanceof StartError)) throw err
  // One line an operator can act on, and an exit code a supervisor can tell apart; no stack.
  logger.fatal({ reason: err.reason, exitCode: err.exitCode, ...err.details }, err.message)
  process.exit(err.exitCode)
})
const { url, port, host } = await server.listen()
// The Node.js options too: npm start and PM2 give some (server/node-options.js), a bare `node` none.
// DATA_DIR only when the documents are there: with Redis the process writes nothing to it.
const dataDir = usesRedis(config) ? {} : { dataDir: config.dataDir }
logger.info({ port, host, url, ...dataDir, node: process.version, nodeOptions: process.execArgv }, 'listening')
process.send?.('ready')

for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
  process.once(signal, () => shutdown(signal))
}

/** @param {string} signal */
async function shutdown (signal) {
  logger.info({ signal }, 'shutting down')
  const timer = setTimeout(() => {
    logger.error({ timeoutMs: config.shutdownTimeoutMs }, 'shutdown timed out')
    process.exit(EXIT_CODES.FAILED)
  }, config.shutdownTimeoutMs).unref()
  try {
    await server.close()
    clearTimeout(timer)
    logger.info('stopped')
    process.exit(0)
  } catch (err) {
    logger.error({ err }, 'shutdown failed')
    process.exit(EXIT_CODES.FAILED)
  }
}
