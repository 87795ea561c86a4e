// What a Redis holds, key by key, as Redis itself reports it: every key found by SCAN with its type,
// `MEMORY USAGE key SAMPLES 0` (every element counted, not a sample) and time to live, grouped by
// the kinds of key Tandem writes (docs/CLUSTER.md, "Who owns what"). A key of no known kind is
// counted as `other`, so nothing Tandem leaves behind can go unreported.

/** @typedef {import('ioredis').Redis} Redis */

/** The kinds of key, in the order of a report; the first pattern a key matches names its kind. */
export const KINDS = Object.freeze(/** @type {const} */ ([
  { kind: 'log', pattern: /^tandem:\{doc:[^}]+\}:log$/, what: 'update log (stream)' },
  { kind: 'snapshot', pattern: /^tandem:\{doc:[^}]+\}:snap$/, what: 'snapshot (hash)' },
  { kind: 'seats', pattern: /^tandem:\{doc:[^}]+\}:seats$/, what: 'editor seats (hash)' },
  { kind: 'connections', pattern: /^tandem:\{doc:[^}]+\}:connections:/, what: 'a user\'s connections (hash)' },
  { kind: 'lock', pattern: /^tandem:\{doc:[^}]+\}:lock$/, what: 'compaction lock' },
  { kind: 'tombstone', pattern: /^tandem:\{doc:[^}]+\}:deleted$/, what: 'tombstone of a deleted document' },
  { kind: 'history', pattern: /^tandem:\{doc:[^}]+\}:h(?:ist|min|key|base|cp|lock)$/, what: 'history: entries, minutes, keyframes, base, checkpoints' },
  { kind: 'sessions', pattern: /^tandem:\{sessions\}:(records|order)$/, what: 'session records and order (shared)' },
  { kind: 'revocations', pattern: /^tandem:\{sessions\}:revoked:/, what: 'token revocations of a session' },
  { kind: 'other', pattern: /(?:)/, what: 'anything else' }
]))

/** @typedef {typeof KINDS[number]['kind']} Kind */

/**
 * @typedef {object} KeyUsage
 * @property {string} key
 * @property {Kind} kind
 * @property {string} type Redis's TYPE
 * @property {string} encoding OBJECT ENCODING: how Redis lays it out (a small hash is a listpack, a larger one a hashtable)
 * @property {number} bytes MEMORY USAGE with SAMPLES 0
 * @property {number} ttlMs PTTL: -1 for a key that never expires
 */

/** @param {string} key @returns {Kind} */
export function kindOf (key) {
  return /** @type {typeof KINDS[number]} */ (KINDS.find(({ pattern }) => pattern.test(key))).kind
}

const SCAN_COUNT = 1000

/**
 * Every key of the database with its type, bytes and TTL, sorted by key.
 * @param {Redis} redis
 * @returns {Promise<KeyUsage[]>}
 */
export async function readKeys (redis) {
  const names = new Set()
  let cursor = '0'
  do {
    const [next, batch] = await redis.scan(cursor, 'COUNT', SCAN_COUNT)
    for (const key of batch) names.add(key)
    cursor = next
  } while (cursor !== '0')
  const keys = [...names].sort()
  const pipeline = redis.pipeline()
  for (const key of keys) pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0').type(key).object('ENCODING', key).pttl(key)
  const replies = await execAll(pipeline)
  // A key may expire between SCAN and the pipeline: MEMORY USAGE answers null for it.
  return keys.flatMap((key, i) => {
    const [bytes, type, encoding, ttlMs] = replies.slice(4 * i, 4 * i + 4)
    return bytes === null ? [] : [{ key, kind: kindOf(key), type: String(type), encoding: String(encoding), bytes: Number(bytes), ttlMs: Number(ttlMs) }]
  })
}

/**
 * What each document's log and snapshot hold: entries left in the log (XLEN), the snapshot's own
 * bytes (`HSTRLEN data`) and the snapshot hash's fields.
 * @param {Redis} redis @param {KeyUsage[]} keys
 */
export async function readDocuments (redis, keys) {
  const logs = keys.filter(({ kind }) => kind === 'log').map(({ key }) => key)
  const snaps = keys.filter(({ kind }) => kind === 'snapshot').map(({ key }) => key)
  const pipeline = redis.pipeline()
  for (const key of logs) pipeline.xlen(key)
  for (const key of snaps) pipeline.hstrlen(key, 'data').hkeys(key)
  const replies = await execAll(pipeline)
  const logEntries = replies.slice(0, logs.length).map(Number)
  const snapReplies = replies.slice(logs.length)
  return {
    /** entries left in each log */
    logEntries,
    /** bytes of each snapshot's `data` field */
    snapshotBytes: snaps.map((_, i) => Number(snapReplies[2 * i])),
    /** each snapshot hash's field names, sorted */
    snapshotFields: snaps.map((_, i) => /** @type {string[]} */ (snapReplies[2 * i + 1]).sort())
  }
}

/**
 * `used_memory` and `used_memory_dataset` of INFO memory, DBSIZE, and MEMORY STATS (its numeric
 * fields, a database's nested ones as `db.0.overhead.hashtable.main`): where used_memory goes.
 * @param {Redis} redis
 */
export async function readMemory (redis) {
  const [info, dbsize, stats] = await Promise.all([redis.info('memory'), redis.dbsize(), redis.call('MEMORY', 'STATS')])
  const field = (/** @type {string} */ name) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1])
  return { usedMemory: field('used_memory'), usedMemoryDataset: field('used_memory_dataset'), dbsize, stats: numericFields(/** @type {unknown[]} */ (stats)) }
}

/** A MEMORY STATS reply's numbers by name. @param {unknown[]} pairs @param {string} [prefix] @returns {Record<string, number>} */
function numericFields (pairs, prefix = '') {
  /** @type {Record<string, number>} */
  const fields = {}
  for (let i = 0; i < pairs.length; i += 2) {
    const name = prefix + String(pairs[i])
    const value = pairs[i + 1]
    if (Array.isArray(value)) Object.assign(fields, numericFields(value, `${name}.`))
    else if (typeof value === 'number') fields[name] = value
  }
  return fields
}

/** @param {ReturnType<Redis['pipeline']>} pipeline @returns {Promise<unknown[]>} */
async function execAll (pipeline) {
  const results = /** @type {[Error | null, unknown][]} */ (await pipeline.exec())
  return results.map(([err, value]) => {
    if (err) throw err
    return value
  })
}
