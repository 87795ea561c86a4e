import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { samplesOf } from './prometheus.js'

// What was measured, for the report: the server's version and storage (from its /api/health), its
// worker count, and, for a server this run started from this checkout, the commit and SYNC_WRITES.
// A server at --url reports only what /api/health and /metrics say; the rest stays null ("not known").

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/**
 * @typedef {object} ServerInfo
 * @property {string | null} version package.json's version, as /api/health reports it
 * @property {string | null} commit `git rev-parse` of the checkout a spawned server ran from
 * @property {string | null} storage `leveldb`, `redis`, …, as /api/health reports it
 * @property {boolean | null} syncWrites SYNC_WRITES of a spawned server
 * @property {number | null} workers processes serving: those a spawner started, or those /metrics shows
 */

/**
 * @param {{ version?: unknown, storage?: unknown }} health the server's /api/health
 * @param {import('./prometheus.js').MetricJson[] | null} metrics the server's /metrics, null when it serves none to this run
 * @param {{ syncWrites?: boolean | null, workers?: number } | null} spawned what the spawner set, or null for a server at --url
 * @param {() => string | null} [commitOf] the checkout's commit (tests pass their own)
 * @returns {ServerInfo}
 */
export function describeServer (health, metrics, spawned, commitOf = checkoutCommit) {
  return {
    version: typeof health.version === 'string' ? health.version : null,
    commit: spawned ? commitOf() : null,
    storage: typeof health.storage === 'string' ? health.storage : null,
    syncWrites: spawned?.syncWrites ?? null,
    workers: spawned?.workers ?? workersIn(metrics)
  }
}

/**
 * The processes one scrape of /metrics shows: every series carries its process's `worker` label
 * (NODE_NAME/PM2 instance), and with Redis the process scraped gathers the series of every process
 * that answers it within a few seconds (server/realtime/cluster.js), so behind PM2's one port too.
 * One that did not answer in time is not counted. Null without metrics or labels.
 * @param {import('./prometheus.js').MetricJson[] | null} metrics
 */
export function workersIn (metrics) {
  if (metrics === null) return null
  const workers = new Set(samplesOf(metrics).map(sample => sample.labels.worker).filter(Boolean))
  return workers.size > 0 ? workers.size : null
}

/** The commit of this checkout, marked when files differ from it; null without git. */
export function checkoutCommit () {
  try {
    const git = (/** @type {string[]} */ ...args) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).trim()
    const commit = git('rev-parse', '--short=12', 'HEAD')
    return git('status', '--porcelain', '--untracked-files=no') === '' ? commit : `${commit} (with uncommitted changes)`
  } catch {
    return null
  }
}
