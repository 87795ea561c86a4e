// All configuration, in one place: each option with its environment variable, default and unit.
// `loadConfig` parses and validates once at start-up, fails fast naming the variable, and freezes.

import { hostname } from 'node:os'
import { TEXT_NAME } from '../isomorphic/events.js'

const MiB = 1024 * 1024
const LOOPBACK = '127.0.0.1'

/** `CORS_ORIGIN` value that allows no other origin: pages this server serves, and clients that are not browsers. */
export const SAME_ORIGIN = 'same-origin'

/**
 * @typedef {object} Config
 * @property {number} port HTTP port (0 = any free port). Default 3000.
 * @property {string} host interface to bind. Default 0.0.0.0; 127.0.0.1 while auth is off and HOST is unset.
 * @property {string} dataDir directory of the embedded LevelDB store. Default ./data.
 * @property {string} logLevel pino level, or `silent`. Default info.
 * @property {number} maxUpdateBytes largest Yjs update accepted, in bytes. Default 1 MiB.
 * @property {number} maxBodyBytes largest REST request body, in bytes. Default 2 MiB.
 * @property {number} maxDocsPerSocket documents one connection may hold open at once. Default 20.
 * @property {number} maxConnectionsPerUser connections one user may join one document with, over every process (0 = no limit). Default 3.
 * @property {number} defaultMaxEditors `maxEditors` of a session created without one. Default 50.
 * @property {number} docIdleMs how long a document with no editors stays loaded, in ms. Default 30000.
 * @property {number} compactAfterUpdates stored updates after which the log is compacted (with a snapshot's worth of bytes). Default 500.
 * @property {boolean} syncWrites fsync every acknowledged write (survives power loss, not just kill -9). Default false.
 * @property {string} corsOrigin allowed browser origins: `*`, `same-origin`, or a comma-separated list; the
 *   server's own always are. Default `*`; `same-origin` while auth is off and CORS_ORIGIN is unset.
 * @property {number} shutdownTimeoutMs bound on graceful shutdown before the process exits anyway. Default 10000.
 * @property {string} redisUrl Redis for sessions, documents and broadcasts (`redis://`, `rediss://`, or
 *   `redis+cluster://host:port,host:port`). Empty: embedded LevelDB and one process. Default empty.
 * @property {string[]} redisClusterNodes Redis Cluster seed nodes (`host:port,...`); implies cluster. Default none.
 * @property {'sharded' | 'classic'} redisAdapter Socket.IO Redis adapter: sharded (SPUBLISH, Redis ≥ 7) or classic. Default sharded.
 * @property {boolean} redisWaitAof ACK only once Redis fsynced the update to its AOF (WAITAOF, Redis ≥ 7.2). Default false.
 * @property {number} redisAppendSpacingMs with Redis, a busy process sends all its appends together at each multiple
 *   of this many ms (0 = each at once): less CPU per update, up to this much more ACK latency and, between the
 *   processes of a spread room, broadcast latency. Default 10.
 * @property {number} seatLeaseMs with Redis, how long a dead process's seats outlive it (renewed every third). Default 30 s.
 * @property {string[]} transports Socket.IO transports served. Default `websocket` with Redis (PM2's
 *   balancer is not sticky), `polling,websocket` without.
 * @property {string} nodeName this host's name in the `worker` label of metrics. Default the hostname.
 * @property {string} nodeEnv `production` requires AUTH_SECRET, API_KEY, and METRICS_TOKEN or METRICS_PUBLIC=true. Default development.
 * @property {string} authSecret HS256 key (32+ characters) signing join tokens; empty turns auth off (development only). Default empty.
 * @property {string} apiKey key for management calls (`Authorization: Bearer`); empty leaves them open (development only). Default empty.
 * @property {boolean} listNeedsApiKey whether listing sessions needs the API key. Default true.
 * @property {string} metricsToken token `/metrics` needs as `Authorization: Bearer` (16+ characters); empty
 *   leaves it open, which production allows only with `metricsPublic`. Default empty.
 * @property {boolean} metricsPublic serve `/metrics` without a token, even in production. Default false.
 * @property {number} tokenTtlSeconds lifetime of a join token minted without `ttl`, in s. Default 3600.
 * @property {number} maxTokenTtlSeconds longest `ttl` a token may be minted with, in s. Default 604800 (7 days).
 * @property {number} trustProxy reverse proxies whose X-Forwarded-For is believed (0 = the connection's address). Default 0.
 * @property {number} restPerMinute REST requests per client IP per minute (0 = no limit). Default 600.
 * @property {number} connectionsPerMinute new Socket.IO connections per client IP per minute (0 = no limit). Default 120.
 * @property {number} maxConnectionsPerIp open Socket.IO connections per client IP, per process (0 = no limit). Default 100.
 * @property {number} updatesPerSecond `doc:update`s per connection per second (0 = no limit). Default 100.
 * @property {number} awarenessPerSecond `doc:awareness` messages per connection per second (0 = no limit). Default 60.
 * @property {number} bytesPerSecond update and awareness bytes per connection per second (0 = no limit). Default 4 MiB.
 * @property {number} joinsPerMinute `doc:join`s per client IP per minute (0 = no limit). Default 600.
 * @property {number} maxDocBytes largest stored size of a document (log since the snapshot included), in bytes. Default 64 MiB.
 * @property {number} maxDocStructs structs (items and collected ranges) a document may hold: wire bytes do not bound
 *   memory, since a struct costs far more heap than its bytes (docs/CONFIGURATION.md). Default 200000.
 * @property {number} maxDocClients Yjs clients a document may hold edits from: every transaction reads a state
 *   vector of all of them, so unbounded client ids would make each update slow. Default 10000.
 * @property {number} maxTypeDepth how deep Yjs types may nest inside the root types (1 = a type in the text). Default 4.
 * @property {string[]} rootTypes root types an update may place items in (comma-separated; `content` always). Default `content`.
 * @property {number} maxInvalidUpdates INVALID_UPDATE refusals after which a connection is closed (0 = never). Default 5.
 * @property {number} awarenessIntervalMs shortest time between two awareness messages to a room, in ms (0 = each at once). Default 50.
 * @property {number} maxAwarenessStateBytes largest awareness state of one client, in bytes of JSON. Default 4096.
 * @property {number} maxAwarenessBytes awareness states one document holds in all, in bytes of JSON. Default 524288.
 * @property {number} maxAwarenessBytesPerUser awareness states of one user (auth off: one connection) per document,
 *   in bytes of JSON (0 = no limit). Default 16384.
 * @property {number} maxAwarenessIdsPerUser awareness client ids one user holds per document, live or held. Default 64.
 * @property {number} awarenessIdHoldMs how long a released awareness client id stays its user's, so nobody else takes
 *   over a departed editor's cursor, in ms. Default 300000.
 * @property {number} fanOutSpacing gap between a busy room's broadcasts, in multiples of the last send's duration
 *   (0 = every turn); rooms of fewer than 8 editors get every update at once. Default 3.
 * @property {number} maxBufferedBytes bytes queued for a connection that is not reading before it is dropped. Default 16 MiB.
 * @property {string} webhookUrl http(s) URL every event is sent to, besides a session's own `webhookUrl`. Default empty (none).
 * @property {string} webhookSecret HMAC-SHA256 key signing webhooks (16+ characters); needed for any webhook. Default empty.
 * @property {number} webhookTimeoutMs how long one delivery may take before it counts as failed, in ms. Default 5000.
 * @property {number} webhookMaxAttempts attempts of one delivery before it is dropped (logged and counted). Default 8.
 * @property {number} webhookBackoffMs first retry's longest wait, doubled each attempt (full jitter), in ms. Default 1000.
 * @property {number} webhookMaxBackoffMs longest wait before any retry, in ms. Default 600000.
 * @property {number} webhookConcurrency deliveries one process sends at once. Default 8.
 * @property {number} webhookDebounceMs window of `document.changed`: one per document per window, in ms. Default 2000.
 * @property {number} webhookOutboxMax deliveries the outbox holds; events past it are dropped (logged and counted). Default 100000.
 * @property {number} historyRetentionMs how long a document's history is kept, in ms, from a duration (`30d`, `12h`; 0 = keep none). Default 0.
 * @property {number} historyKeystrokesMs how long history keeps every update before folding them into one per minute, in ms, from a duration. Default 1h.
 * @property {number} historyMaxBytes bytes of history kept per document (checkpoints aside); the oldest go first. Default 64 MiB.
 */

/** @type {Record<keyof Config, { env: string, default: string, parse: (raw: string) => any, secret?: boolean }>} */
const OPTIONS = {
  port: { env: 'PORT', default: '3000', parse: integer(0, 65535) },
  host: { env: 'HOST', default: '0.0.0.0', parse: nonEmpty },
  dataDir: { env: 'DATA_DIR', default: './data', parse: nonEmpty },
  logLevel: { env: 'LOG_LEVEL', default: 'info', parse: oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']) },
  maxUpdateBytes: { env: 'MAX_UPDATE_BYTES', default: String(MiB), parse: integer(64, 64 * MiB) },
  maxBodyBytes: { env: 'MAX_BODY_BYTES', default: String(2 * MiB), parse: integer(1024, 64 * MiB) },
  maxDocsPerSocket: { env: 'MAX_DOCS_PER_SOCKET', default: '20', parse: integer(1, 10000) },
  maxConnectionsPerUser: { env: 'MAX_CONNECTIONS_PER_USER', default: '3', parse: integer(0, 10000) },
  defaultMaxEditors: { env: 'DEFAULT_MAX_EDITORS', default: '50', parse: integer(1, 100000) },
  docIdleMs: { env: 'DOC_IDLE_MS', default: '30000', parse: integer(0, 24 * 3600 * 1000) },
  compactAfterUpdates: { env: 'COMPACT_AFTER_UPDATES', default: '500', parse: integer(2, 1e7) },
  syncWrites: { env: 'SYNC_WRITES', default: 'false', parse: boolean },
  corsOrigin: { env: 'CORS_ORIGIN', default: '*', parse: nonEmpty },
  shutdownTimeoutMs: { env: 'SHUTDOWN_TIMEOUT_MS', default: '10000', parse: integer(100, 600000) },
  redisUrl: { env: 'REDIS_URL', default: '', parse: redisUrl },
  redisClusterNodes: { env: 'REDIS_CLUSTER_NODES', default: '', parse: hostPorts },
  redisAdapter: { env: 'REDIS_ADAPTER', default: 'sharded', parse: oneOf(['sharded', 'classic']) },
  redisWaitAof: { env: 'REDIS_WAITAOF', default: 'false', parse: boolean },
  redisAppendSpacingMs: { env: 'REDIS_APPEND_SPACING_MS', default: '10', parse: integer(0, 100) },
  seatLeaseMs: { env: 'SEAT_LEASE_MS', default: '30000', parse: integer(300, 3600 * 1000) },
  transports: { env: 'TRANSPORTS', default: 'auto', parse: transports },
  nodeName: { env: 'NODE_NAME', default: '', parse: raw => raw || hostname() },
  nodeEnv: { env: 'NODE_ENV', default: 'development', parse: nonEmpty },
  authSecret: { env: 'AUTH_SECRET', default: '', parse: secret(32), secret: true },
  apiKey: { env: 'API_KEY', default: '', parse: secret(16), secret: true },
  listNeedsApiKey: { env: 'LIST_NEEDS_API_KEY', default: 'true', parse: boolean },
  metricsToken: { env: 'METRICS_TOKEN', default: '', parse: secret(16), secret: true },
  metricsPublic: { env: 'METRICS_PUBLIC', default: 'false', parse: boolean },
  tokenTtlSeconds: { env: 'TOKEN_TTL_SECONDS', default: '3600', parse: integer(10, 365 * 24 * 3600) },
  maxTokenTtlSeconds: { env: 'MAX_TOKEN_TTL_SECONDS', default: String(7 * 24 * 3600), parse: integer(10, 365 * 24 * 3600) },
  trustProxy: { env: 'TRUST_PROXY', default: '0', parse: integer(0, 10) },
  restPerMinute: { env: 'REST_PER_MINUTE', default: '600', parse: integer(0, 1e7) },
  connectionsPerMinute: { env: 'CONNECTIONS_PER_MINUTE', default: '120', parse: integer(0, 1e7) },
  maxConnectionsPerIp: { env: 'MAX_CONNECTIONS_PER_IP', default: '100', parse: integer(0, 1e7) },
  updatesPerSecond: { env: 'UPDATES_PER_SECOND', default: '100', parse: integer(0, 1e7) },
  awarenessPerSecond: { env: 'AWARENESS_PER_SECOND', default: '60', parse: integer(0, 1e7) },
  bytesPerSecond: { env: 'BYTES_PER_SECOND', default: String(4 * MiB), parse: integer(0, 1024 * MiB) },
  joinsPerMinute: { env: 'JOINS_PER_MINUTE', default: '600', parse: integer(0, 1e7) },
  maxDocBytes: { env: 'MAX_DOC_BYTES', default: String(64 * MiB), parse: integer(1024, 4096 * MiB) },
  maxDocStructs: { env: 'MAX_DOC_STRUCTS', default: '200000', parse: integer(100, 1e8) },
  maxDocClients: { env: 'MAX_DOC_CLIENTS', default: '10000', parse: integer(1, 1e7) },
  maxTypeDepth: { env: 'MAX_TYPE_DEPTH', default: '4', parse: integer(0, 64) },
  rootTypes: { env: 'ROOT_TYPES', default: TEXT_NAME, parse: rootTypes },
  maxInvalidUpdates: { env: 'MAX_INVALID_UPDATES', default: '5', parse: integer(0, 1e6) },
  awarenessIntervalMs: { env: 'AWARENESS_INTERVAL_MS', default: '50', parse: integer(0, 10000) },
  maxAwarenessStateBytes: { env: 'MAX_AWARENESS_STATE_BYTES', default: '4096', parse: integer(256, MiB) },
  maxAwarenessBytes: { env: 'MAX_AWARENESS_BYTES', default: String(512 * 1024), parse: integer(1024, 1024 * MiB) },
  maxAwarenessBytesPerUser: { env: 'MAX_AWARENESS_BYTES_PER_USER', default: '16384', parse: integer(0, 1024 * MiB) },
  maxAwarenessIdsPerUser: { env: 'MAX_AWARENESS_IDS_PER_USER', default: '64', parse: integer(1, 1e6) },
  awarenessIdHoldMs: { env: 'AWARENESS_ID_HOLD_MS', default: '300000', parse: integer(0, 24 * 3600 * 1000) },
  fanOutSpacing: { env: 'FANOUT_SPACING', default: '3', parse: integer(0, 100) },
  maxBufferedBytes: { env: 'MAX_BUFFERED_BYTES', default: String(16 * MiB), parse: integer(64 * 1024, 1024 * MiB) },
  webhookUrl: { env: 'WEBHOOK_URL', default: '', parse: raw => raw === '' ? raw : httpUrl(raw) },
  webhookSecret: { env: 'WEBHOOK_SECRET', default: '', parse: secret(16), secret: true },
  webhookTimeoutMs: { env: 'WEBHOOK_TIMEOUT_MS', default: '5000', parse: integer(10, 120000) },
  webhookMaxAttempts: { env: 'WEBHOOK_MAX_ATTEMPTS', default: '8', parse: integer(1, 100) },
  webhookBackoffMs: { env: 'WEBHOOK_BACKOFF_MS', default: '1000', parse: integer(1, 3600 * 1000) },
  webhookMaxBackoffMs: { env: 'WEBHOOK_MAX_BACKOFF_MS', default: '600000', parse: integer(1, 24 * 3600 * 1000) },
  webhookConcurrency: { env: 'WEBHOOK_CONCURRENCY', default: '8', parse: integer(1, 1000) },
  webhookDebounceMs: { env: 'WEBHOOK_DEBOUNCE_MS', default: '2000', parse: integer(10, 3600 * 1000) },
  webhookOutboxMax: { env: 'WEBHOOK_OUTBOX_MAX', default: '100000', parse: integer(10, 1e8) },
  historyRetentionMs: { env: 'HISTORY_RETENTION', default: '0', parse: duration(3650) },
  historyKeystrokesMs: { env: 'HISTORY_KEYSTROKES', default: '1h', parse: duration(3650, 60 * 1000) },
  historyMaxBytes: { env: 'HISTORY_MAX_BYTES', default: String(64 * MiB), parse: integer(64 * 1024, 64 * 1024 * MiB) }
}

/** The environment variables `loadConfig` reads, with their defaults (for docs and tests). */
export const ENVIRONMENT = Object.freeze(
  Object.values(OPTIONS).map(({ env, default: value }) => ({ env, default: value }))
)

export class ConfigError extends Error {}

/**
 * @param {Record<string, string | undefined>} env usually `process.env`
 * @param {Partial<Config>} [overrides] values that win over the environment (tests, embedding)
 * @returns {Readonly<Config>}
 */
export function loadConfig (env, overrides = {}) {
  /** @type {any} */
  const config = {}
  for (const [key, option] of Object.entries(OPTIONS)) {
    if (key in overrides) {
      config[key] = overrides[/** @type {keyof Config} */ (key)]
      continue
    }
    const raw = env[option.env] ?? option.default
    try {
      config[key] = option.parse(raw.trim())
    } catch (err) {
      const shown = option.secret ? '(hidden)' : JSON.stringify(raw)
      throw new ConfigError(`${option.env}=${shown} is invalid: ${/** @type {Error} */ (err).message}`)
    }
  }
  // Auth off lets anyone who reaches the server edit any session: unless told otherwise, only this
  // machine and the pages it serves may.
  if (!config.authSecret) {
    if (!('host' in overrides) && env.HOST === undefined) config.host = LOOPBACK
    if (!('corsOrigin' in overrides) && env.CORS_ORIGIN === undefined) config.corsOrigin = SAME_ORIGIN
  }
  if (config.transports === 'auto') {
    config.transports = usesRedis(config) ? ['websocket'] : ['polling', 'websocket']
  }
  const cluster = config.redisClusterNodes.length > 0 || config.redisUrl.startsWith('redis+cluster://')
  if (config.redisWaitAof && (!usesRedis(config) || cluster)) {
    throw new ConfigError('REDIS_WAITAOF=true needs a single Redis in REDIS_URL (not a Redis Cluster)')
  }
  if (config.nodeEnv === 'production' && (!config.authSecret || !config.apiKey)) {
    throw new ConfigError('production (NODE_ENV=production) needs AUTH_SECRET and API_KEY')
  }
  // /metrics names hosts and counts connections and documents: not for anyone who can reach the port.
  if (config.nodeEnv === 'production' && !config.metricsToken && !config.metricsPublic) {
    throw new ConfigError('production (NODE_ENV=production) needs METRICS_TOKEN, or METRICS_PUBLIC=true to serve /metrics openly')
  }
  if (config.metricsToken && config.metricsPublic) {
    throw new ConfigError('METRICS_TOKEN and METRICS_PUBLIC=true contradict each other: set one')
  }
  if (config.authSecret && !config.apiKey) {
    throw new ConfigError('AUTH_SECRET needs API_KEY too: join tokens are minted with the API key')
  }
  if (config.tokenTtlSeconds > config.maxTokenTtlSeconds) {
    throw new ConfigError('TOKEN_TTL_SECONDS must not exceed MAX_TOKEN_TTL_SECONDS')
  }
  if (config.bytesPerSecond !== 0 && config.bytesPerSecond < config.maxUpdateBytes) {
    throw new ConfigError('BYTES_PER_SECOND must be at least MAX_UPDATE_BYTES, or 0: the largest update must fit')
  }
  if (config.maxAwarenessStateBytes > config.maxAwarenessBytes) {
    throw new ConfigError('MAX_AWARENESS_STATE_BYTES must not exceed MAX_AWARENESS_BYTES: one state must fit')
  }
  if (config.maxAwarenessBytesPerUser !== 0 && config.maxAwarenessStateBytes > config.maxAwarenessBytesPerUser) {
    throw new ConfigError('MAX_AWARENESS_STATE_BYTES must not exceed MAX_AWARENESS_BYTES_PER_USER, or that be 0: one state must fit')
  }
  if (config.webhookUrl && !config.webhookSecret) {
    throw new ConfigError('WEBHOOK_URL needs WEBHOOK_SECRET (16+ characters): every webhook is signed')
  }
  if (config.webhookBackoffMs > config.webhookMaxBackoffMs) {
    throw new ConfigError('WEBHOOK_BACKOFF_MS must not exceed WEBHOOK_MAX_BACKOFF_MS')
  }
  if (cluster && config.redisAdapter === 'classic') {
    throw new ConfigError('REDIS_ADAPTER=classic does not work on a Redis Cluster; use sharded')
  }
  return Object.freeze(config)
}

/**
 * The configuration of a PM2 cluster's worker: PM2 balances one port over the workers, so any of them
 * may serve any document, which only Redis lets them share. Checked by each worker, by
 * ecosystem.config.js and by `npm run cluster` before PM2 starts (scripts/check-cluster.js).
 * @param {Record<string, string | undefined>} env
 */
export function loadClusterConfig (env) {
  const config = loadConfig(env)
  if (!usesRedis(config)) {
    throw new ConfigError('a PM2 cluster needs REDIS_URL (or REDIS_CLUSTER_NODES): workers share documents through Redis')
  }
  return config
}

/** Whether everything goes through Redis, and so may span processes. @param {Pick<Config, 'redisUrl' | 'redisClusterNodes'>} config */
export function usesRedis (config) {
  return config.redisUrl !== '' || config.redisClusterNodes.length > 0
}

/** @param {number} min @param {number} max */
function integer (min, max) {
  return (/** @type {string} */ raw) => {
    if (!/^\d+$/.test(raw)) throw new Error('expected a whole number')
    const value = Number(raw)
    if (value < min || value > max) throw new Error(`expected ${min}..${max}`)
    return value
  }
}

const DURATION_UNITS = Object.freeze({ s: 1000, m: 60 * 1000, h: 3600 * 1000, d: 24 * 3600 * 1000 })

/** A whole number of s, m, h or d (`30d`), or 0 if `minMs` is; in ms. @param {number} maxDays @param {number} [minMs] */
function duration (maxDays, minMs = 0) {
  return (/** @type {string} */ raw) => {
    if (raw === '0' && minMs === 0) return 0
    const match = /^(\d+)([smhd])$/.exec(raw)
    if (!match) throw new Error(`expected ${minMs === 0 ? '0 or ' : ''}a duration such as 90s, 30m, 12h or 30d`)
    const ms = Number(match[1]) * DURATION_UNITS[/** @type {keyof typeof DURATION_UNITS} */ (match[2])]
    if (ms > maxDays * DURATION_UNITS.d) throw new Error(`expected at most ${maxDays}d`)
    if (ms < minMs) throw new Error(`expected at least ${minMs / 1000}s`)
    return ms
  }
}

/** @param {string[]} allowed */
function oneOf (allowed) {
  return (/** @type {string} */ raw) => {
    if (!allowed.includes(raw)) throw new Error(`expected one of ${allowed.join(', ')}`)
    return raw
  }
}

/** @param {string} raw */
function boolean (raw) {
  if (['true', '1', 'yes'].includes(raw)) return true
  if (['false', '0', 'no', ''].includes(raw)) return false
  throw new Error('expected true or false')
}

/** @param {string} raw */
function redisUrl (raw) {
  if (raw === '') return raw
  if (!/^(rediss?|redis\+cluster):\/\/./.test(raw)) throw new Error('expected redis://, rediss:// or redis+cluster://')
  return raw
}

/** @param {string} raw */
function hostPorts (raw) {
  if (raw === '') return []
  const nodes = raw.split(',').map(node => node.trim())
  for (const node of nodes) {
    if (!/^[\w.-]+:\d{1,5}$/.test(node)) throw new Error(`expected host:port, got ${JSON.stringify(node)}`)
  }
  return nodes
}

/** @param {string} raw */
function transports (raw) {
  if (raw === 'auto') return raw
  const list = raw.split(',').map(name => name.trim())
  for (const name of list) {
    if (!['polling', 'websocket'].includes(name)) throw new Error('expected auto, or polling and/or websocket')
  }
  return list
}

/** @param {string} raw */
function rootTypes (raw) {
  const names = raw.split(',').map(name => name.trim())
  if (!names.includes(TEXT_NAME)) throw new Error(`must include ${TEXT_NAME}, the text`)
  if (names.length > 16 || names.some(name => name === '')) throw new Error('expected 1..16 comma-separated names')
  return Object.freeze([...new Set(names)])
}

/** A secret: empty (unset) or at least `minLength` characters. @param {number} minLength */
function secret (minLength) {
  return (/** @type {string} */ raw) => {
    if (raw !== '' && raw.length < minLength) throw new Error(`must be at least ${minLength} characters`)
    return raw
  }
}

/** An absolute http: or https: URL; webhooks go nowhere else. @param {string} raw */
export function httpUrl (raw) {
  let url
  try {
    url = new URL(raw)
  } catch {
    throw new Error('expected an absolute http:// or https:// URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('expected an http:// or https:// URL')
  return url.href
}

/** @param {string} raw */
function nonEmpty (raw) {
  if (raw === '') throw new Error('must not be empty')
  return raw
}
