import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

// What was measured, for the report: the server's version and storage (from its /api/health), and,
// for a server this run started from this checkout, the commit, SYNC_WRITES and the worker count.
// A server at --url reports only what /api/health says; the rest stays null ("not known").

const ROOT = fileURLToPath(new URL('..', import.meta.url))

/**
 * @typedef {object} ServerInfo
 * @property {string | null} version package.json's version, as /api/health reports it
 * @property {string | null} commit `git rev-parse` of the checkout a spawned server ran from
 * @property {string | null} storage `leveldb`, `redis`, …, as /api/health reports it
 * @property {boolean | null} syncWrites SYNC_WRITES of a spawned server
 * @property {number | null} workers processes serving: 1, or the PM2 workers of a spawned cluster
 */

/**
 * @param {{ version?: unknown, storage?: unknown }} health the server's /api/health
 * @param {{ syncWrites?: boolean | null, workers?: number } | null} spawned what the spawner set, or null for a server at --url
 * @param {() => string | null} [commitOf] the checkout's commit (tests pass their own)
 * @returns {ServerInfo}
 */
export function describeServer (health, spawned, commitOf = checkoutCommit) {
  return {
    version: typeof health.version === 'string' ? health.version : null,
    commit: spawned ? commitOf() : null,
    storage: typeof health.storage === 'string' ? health.storage : null,
    syncWrites: spawned?.syncWrites ?? null,
    workers: spawned?.workers ?? null
  }
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
