// A PM2 cluster of Tandem workers: `npm run cluster` on a VPS, `pm2-runtime ecosystem.config.js` in a
// container. Every worker needs REDIS_URL (or REDIS_CLUSTER_NODES): documents, sessions and
// broadcasts go through Redis, which is what lets PM2's non-sticky balancer send any connection to
// any worker. PM2 loads this file with require(), so it exports `apps` by name. Workers inherit the
// environment: under NODE_ENV=production it must carry AUTH_SECRET, API_KEY and METRICS_TOKEN (or
// METRICS_PUBLIC=true), or each worker refuses to start.

import { loadClusterConfig } from './server/config.js'
import { NODE_OPTIONS } from './server/node-options.js'

// The workers' configuration, checked once here: without it, a missing secret or REDIS_URL (say
// `docker run` without AUTH_SECRET under the image's NODE_ENV=production) makes every worker exit at
// start and PM2 restart it forever. This way pm2-runtime stops at once, naming the variable; `pm2
// start` has already started its daemon by then, so `npm run cluster` checks before it
// (scripts/check-cluster.js).
loadClusterConfig(process.env)

const workers = process.env.WORKERS ?? 'max'

/** What both ways of running the workers share (ecosystem.ports.config.js is the other). */
export const common = {
  script: 'server/index.js',
  node_args: [...NODE_OPTIONS],
  // A number, or `max` for one worker per CPU.
  instances: workers === 'max' ? 'max' : Number(workers),
  // A worker counts as started once it listens and sends 'ready' (server/index.js), so a reload
  // replaces workers one by one without a moment with none serving.
  wait_ready: true,
  listen_timeout: 20000,
  // Longer than a worker's drain (SHUTDOWN_TIMEOUT_MS, 10 s by default): PM2 sends SIGINT, the worker
  // closes Socket.IO (clients reconnect to another worker), flushes documents and exits by itself.
  kill_timeout: 15000,
  // Restart a crashed worker at once, then back off if it keeps crashing.
  exp_backoff_restart_delay: 100,
  merge_logs: true
}

export const apps = [{
  name: 'tandem',
  ...common,
  exec_mode: 'cluster'
}]
