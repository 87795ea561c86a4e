// `npm run cluster`'s first step (package.json's `precluster`): the configuration every worker will
// load, checked before PM2 starts anything. Without it `pm2 start` prints "launched" and exits 0
// while each worker exits at start and PM2 restarts it forever, the reason only in `pm2 logs`.

import { ConfigError, loadClusterConfig } from '../server/config.js'
import { EXIT_CODES } from '../server/exit-codes.js'

try {
  loadClusterConfig(process.env)
} catch (err) {
  if (!(err instanceof ConfigError)) throw err
  process.stderr.write(`tandem: ${err.message}\n`)
  process.exit(EXIT_CODES.CONFIG)
}
