import { AppError } from '../errors.js'
import { STORE_BEHIND } from './doc-store.js'
import { RedisBatch } from './redis-batch.js'
import { RedisHistory, historyKeysOf } from './redis-history.js'
import { execMulti } from './redis.js'
import { compareIds } from './stream-ids.js'

// Documents in Redis, after y-redis: per document a Stream (`…:log`), the update log, and a hash
// (`…:snap`) of a snapshot, the stream id it covers and the newest entry, and the history's keys
// (redis-history.js). One hash tag per document keeps its keys in one Cluster slot, so the MULTIs and
// scripts below stay legal.

const LOCK_TTL_MS = 30000

// Outlives any copy another process may still hold and compact (DOC_IDLE_MS is at most a day).
const TOMBSTONE_TTL_MS = 7 * 24 * 3600 * 1000

// Whether stream id `a` comes before `b` (Lua numbers hold a millisecond time exactly).
const OLDER_LUA = `local function older (a, b)
  local am, as = string.match(a, '(%d+)-(%d+)')
  local bm, bs = string.match(b, '(%d+)-(%d+)')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end`

// Stores a snapshot only if it covers more than the stored one, and trims what it covers, in one
// step, so a stale copy never replaces a newer snapshot; a deleted document stays deleted. The log's
// length is kept beside the snapshot; a log left empty goes, so an idle document is its hash.
const COMPACT_SCRIPT = `
if redis.call('EXISTS', KEYS[3]) == 1 or redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
${OLDER_LUA}
local current = redis.call('HGET', KEYS[1], 'position')
if current and not older(current, ARGV[2]) then return 0 end
local ms, seq = string.match(ARGV[2], '(%d+)-(%d+)')
redis.call('XTRIM', KEYS[2], 'MINID', ms .. '-' .. (tonumber(seq) + 1))
local length = redis.call('XLEN', KEYS[2])
if length == 0 then redis.call('DEL', KEYS[2]) end
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'position', ARGV[2], 'length', length)
return 1
`

// Appends several documents' updates (KEYS: log, snapshot, tombstone, history of each; ARGV: origin,
// '1' for sharded pub/sub, the channel for all the run's writes ('' = each on its document's),
// then per document its channel ('' = none), '1' if the writer's subscriber holds that channel, the
// newest entry its writer knows ('' = none), the number of its updates, the time they are stored at
// in ms ('' = keep no history), the updates, then with a time each one's author ('+name', or '-' for
// none)). Each update kept in history is an entry of the history stream whose id is its time, kept
// after the newest one (`hlast` in the snapshot hash). Replies per document with the span the feed
// announces (entry before, last entry, log length), 'DELETED', or 'BEHIND' when the log is older
// than the writer knows (Redis restarted on older data). The snapshot hash keeps the log's newest
// entry and length beside it, so a document costs one read and one write besides its XADDs
// (docs/CLUSTER.md, "The path of an update"); a hash without them (a new or deleted document) is
// the rare path. A write is published only when a process other than the writer subscribes to
// the document's channel, so a document on one process costs no message; publishing here keeps
// stream order. The message is the feed's (redis-doc-feed.js).
const APPEND_SCRIPT = `
${OLDER_LUA}
local function historyId (at, last)
  if last then
    local ms, seq = string.match(last, '(%d+)-(%d+)')
    if tonumber(ms) >= at then return ms .. '-' .. (tonumber(seq) + 1) end
  end
  return string.format('%d-0', at)
end
local function uint32 (n)
  return string.char(math.floor(n / 16777216) % 256, math.floor(n / 65536) % 256, math.floor(n / 256) % 256, n % 256)
end
local function after (id)
  local ms, seq = string.match(id, '(%d+)-(%d+)')
  local time = redis.call('TIME')
  local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  if now > tonumber(ms) then return string.format('%d-0', now) end
  return ms .. '-' .. (tonumber(seq) + 1)
end
local replies = {}
local channels, listening = {}, {}
local publish = ARGV[2] == '1' and 'SPUBLISH' or 'PUBLISH'
local head = string.char(1, #ARGV[1]) .. ARGV[1]
local allWrites = {}
local a = 4
for k = 1, #KEYS, 4 do
  if ARGV[a] ~= '' then channels[#channels + 1] = ARGV[a] end
  a = a + 5 + tonumber(ARGV[a + 3]) * (ARGV[a + 4] == '' and 1 or 2)
end
for c = 1, #channels, 1000 do
  local counts = redis.call('PUBSUB', ARGV[2] == '1' and 'SHARDNUMSUB' or 'NUMSUB', unpack(channels, c, math.min(c + 999, #channels)))
  for i = 1, #counts, 2 do listening[counts[i]] = counts[i + 1] end
end
a = 4
for k = 1, #KEYS, 4 do
  local channel, own, known, at, first = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 4], a + 5
  local count = tonumber(ARGV[a + 3])
  a = first + count * (at == '' and 1 or 2)
  local kept = redis.call('HMGET', KEYS[k + 1], 'last', 'length', 'hlast')
  local prev, length = kept[1], tonumber(kept[2])
  if not prev and redis.call('EXISTS', KEYS[k + 2]) == 0 then
    local newest = redis.call('XREVRANGE', KEYS[k], '+', '-', 'COUNT', 1)
    prev = newest[1] and newest[1][1] or redis.call('HGET', KEYS[k + 1], 'position') or '0-0'
  end
  if not prev then
    replies[#replies + 1] = 'DELETED'
  elseif known ~= '' and older(prev, known) then
    replies[#replies + 1] = 'BEHIND'
  else
    -- An empty log may be gone: its first new entry must still come after the newest it had.
    local last = length == 0 and redis.call('XADD', KEYS[k], after(prev), 'u', ARGV[first]) or nil
    for i = last and first + 1 or first, first + count - 1 do last = redis.call('XADD', KEYS[k], '*', 'u', ARGV[i]) end
    length = length and length + count or redis.call('XLEN', KEYS[k])
    redis.call('HSET', KEYS[k + 1], 'last', last, 'length', length)
    if at ~= '' then
      local hlast = kept[3]
      for i = 0, count - 1 do
        hlast = historyId(tonumber(at), hlast)
        local by = ARGV[first + count + i]
        if by == '-' then redis.call('XADD', KEYS[k + 3], hlast, 'u', ARGV[first + i])
        else redis.call('XADD', KEYS[k + 3], hlast, 'u', ARGV[first + i], 'b', string.sub(by, 2)) end
      end
      redis.call('HSET', KEYS[k + 1], 'hlast', hlast)
    end
    local heard = channel ~= '' and (listening[channel] or 0) > (own == '1' and 1 or 0)
    if heard then
      local parts = ARGV[3] == '' and { head } or allWrites
      local n = #parts
      parts[n + 1] = string.char(math.floor(#channel / 256), #channel % 256) .. channel
      parts[n + 2] = string.char(#prev) .. prev .. string.char(#last) .. last .. uint32(count)
      n = n + 2
      for i = first, first + count - 1 do
        parts[n + 1] = uint32(#ARGV[i])
        parts[n + 2] = ARGV[i]
        n = n + 2
      end
      if ARGV[3] == '' then redis.call(publish, channel, table.concat(parts)) end
    end
    replies[#replies + 1] = { prev, last, length }
  end
end
if #allWrites > 0 then redis.call(publish, ARGV[3], head .. table.concat(allWrites)) end
return replies
`

const UNLOCK_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`

/** @typedef {import('./doc-store.js').DocStore} DocStore */
/**
 * @typedef {{ docId: string, keys: ReturnType<typeof keysOf>, channel: string, known: string, buffers: Buffer[],
 *   history: import('./update-log.js').UpdatesHistory | undefined }} Append one document's write
 */

/**
 * The scripts as `defineCommand` adds them, which ioredis's types cannot see.
 * @typedef {object} DocScripts
 * @property {(numberOfKeys: number, ...keysThenArgs: (string | Buffer)[]) => Promise<([string, string, number] | 'DELETED' | 'BEHIND')[]>} tandemAppend
 * @property {(snap: string, log: string, deleted: string, data: Buffer, position: string) => Promise<0 | 1>} tandemCompact
 * @property {(lock: string, token: string) => Promise<0 | 1>} tandemUnlock
 */

/** @implements {DocStore} */
export class RedisDocStore {
  kind = 'redis'
  shared = true

  /**
   * @param {import('./redis.js').RedisClient} client
   * @param {{ guard: import('./redis-guard.js').RedisGuard, waitAof: boolean, feed?: import('./redis-doc-feed.js').RedisDocFeed, appendSpacingMs: number }} options
   *   `appendSpacingMs`: under load, one run of the append script per this many ms at most (redis-batch.js;
   *   REDIS_APPEND_SPACING_MS)
   */
  constructor (client, { guard, waitAof, feed, appendSpacingMs }) {
    this.client = /** @type {import('./redis.js').RedisClient & DocScripts} */ (client)
    this.guard = guard
    this.waitAof = waitAof
    this.feed = feed
    client.defineCommand('tandemCompact', { numberOfKeys: 3, lua: COMPACT_SCRIPT })
    // The number of keys comes with each call: 3 per document.
    client.defineCommand('tandemAppend', { lua: APPEND_SCRIPT })
    client.defineCommand('tandemUnlock', { numberOfKeys: 1, lua: UNLOCK_SCRIPT })
    /** @type {RedisBatch<Append, [string, string, number]>} */
    this.appends = new RedisBatch({ spacingMs: appendSpacingMs, together: !client.isCluster, sendTogether: this.#appendTogether })
    this.history = new RedisHistory(this.client, guard)
  }

  /** @param {string} docId */
  async load (docId) {
    const keys = keysOf(docId)
    const [snap, entries] = await this.guard.read(() => execMulti(this.client.multi()
      .hmgetBuffer(keys.snap, 'data', 'position')
      .xrangeBuffer(keys.log, '-', '+')))
    const [data, positionBuffer] = /** @type {(Buffer | null)[]} */ (snap)
    const snapPosition = positionBuffer?.toString() ?? null
    const log = /** @type {[Buffer, Buffer[]][]} */ (entries)
      .filter(([id]) => snapPosition === null || compareIds(id.toString(), snapPosition) > 0)
    const updates = log.map(([, fields]) => new Uint8Array(fields[1]))
    const position = log.length > 0 ? log[log.length - 1][0].toString() : (snapPosition ?? '0-0')
    return { updates: data ? [new Uint8Array(data), ...updates] : updates, position }
  }

  /** @param {string} docId @param {string | null} since */
  async readSince (docId, since) {
    const position = since ?? '0-0'
    const keys = keysOf(docId)
    const [snapPosition, entries] = await this.guard.read(() => execMulti(this.client.multi()
      .hget(keys.snap, 'position')
      .xrangeBuffer(keys.log, `(${position}`, '+')))
    // Entries up to a newer snapshot may already be trimmed: take the whole document instead.
    if (snapPosition && compareIds(/** @type {string} */ (snapPosition), position) > 0) return this.load(docId)
    const log = /** @type {[Buffer, Buffer[]][]} */ (entries)
    return {
      updates: log.map(([, fields]) => new Uint8Array(fields[1])),
      position: log.length > 0 ? log[log.length - 1][0].toString() : position
    }
  }

  /**
   * One pipeline for all (a command each on a Cluster); null where the log predates the kept entry or
   * Redis did not answer. @param {string[]} docIds
   */
  async newestEntries (docIds) {
    if (this.client.isCluster) return Promise.all(docIds.map(docId => this.client.hget(keysOf(docId).snap, 'last').catch(() => null)))
    const replies = await this.client.pipeline(docIds.map(docId => ['hget', keysOf(docId).snap, 'last'])).exec()
    return docIds.map((_, i) => {
      const [err, entry] = replies?.[i] ?? [null, null]
      return err ? null : /** @type {string | null} */ (entry)
    })
  }

  /**
   * @param {string} docId @param {Uint8Array[]} updates
   * @param {string | null} [known] refused with STORE_BEHIND if Redis's log is older
   * @param {import('./update-log.js').UpdatesHistory} [history] kept by the same run of the script
   */
  async append (docId, updates, known = null, history = undefined) {
    const buffers = updates.map(update => Buffer.from(update.buffer, update.byteOffset, update.byteLength))
    // With REDIS_WAITAOF the write is published only once it is on disk, so not by the script.
    const channel = this.feed && !this.waitAof ? this.feed.channelOf(docId) : ''
    const [prev, last, logLength] = await this.guard.write(async () => {
      const reply = await this.appends.send({ docId, keys: keysOf(docId), channel, known: known ?? '', buffers, history })
      if (this.waitAof) await this.#waitAof()
      return reply
    })
    const span = { prev: String(prev), last: String(last) }
    if (this.waitAof) this.feed?.publish(docId, { ...span, updates })
    return { logLength, span }
  }

  /** @param {Append[]} appends @returns {Promise<([string, string, number] | Error)[]>} */
  #appendTogether = async (appends) => {
    const keys = appends.flatMap(({ keys }) => [keys.log, keys.snap, keys.deleted, keys.history])
    // Whether this process listens is read as the script leaves: a subscription may have ended meanwhile.
    const args = appends.flatMap(({ docId, channel, known, buffers, history }) => [
      channel, channel !== '' && this.feed?.holds(docId) ? '1' : '0', known, String(buffers.length),
      history ? String(Math.round(history.at)) : '', ...buffers,
      ...history ? history.by.map(name => name === null ? '-' : `+${name}`) : []
    ])
    const { origin = '', sharded = false, allWritesChannel = '' } = this.feed ?? {}
    const replies = await this.client.tandemAppend(keys.length, ...keys, origin, sharded ? '1' : '0', allWritesChannel, ...args)
    return replies.map(reply => {
      if (reply === 'DELETED') return new AppError('NOT_FOUND', 'the document was deleted')
      if (reply === 'BEHIND') return Object.assign(new Error('Redis holds less of the document than it acknowledged (restarted on older data?)'), { code: STORE_BEHIND })
      return reply
    })
  }

  /** @param {string} docId @param {() => Promise<{ snapshot: Uint8Array, position: string | null }>} makeSnapshot */
  async compact (docId, makeSnapshot) {
    const keys = keysOf(docId)
    const token = `${process.pid}-${Math.random().toString(36).slice(2)}`
    const locked = await this.guard.write(() => this.client.set(keys.lock, token, 'PX', LOCK_TTL_MS, 'NX'))
    if (!locked) return false
    try {
      const { snapshot, position } = await makeSnapshot()
      const data = Buffer.from(snapshot.buffer, snapshot.byteOffset, snapshot.byteLength)
      const stored = await this.guard.write(() => this.client.tandemCompact(keys.snap, keys.log, keys.deleted, data, position ?? '0-0'), stored => stored === 1)
      return stored === 1
    } finally {
      await this.client.tandemUnlock(keys.lock, token).catch(() => {})
    }
  }

  /** @param {string} docId */
  async delete (docId) {
    const keys = keysOf(docId)
    await this.guard.write(() => execMulti(this.client.multi()
      .del(keys.snap, keys.log, keys.lock)
      // History may hold hours of entries: freed off Redis's main thread.
      .unlink(...Object.values(historyKeysOf(docId)))
      .set(keys.deleted, '1', 'PX', TOMBSTONE_TTL_MS)))
  }

  async #waitAof () {
    // 1 = this Redis has fsynced its AOF up to our writes.
    const [local] = /** @type {number[]} */ (await this.client.call('WAITAOF', '1', '0', '1000'))
    if (local < 1) throw Object.assign(new Error('Redis did not confirm the append-only fsync in time'), { code: 'WAITAOF_TIMEOUT' })
  }
}

/** @param {string} docId */
function keysOf (docId) {
  const tag = `tandem:{doc:${docId}}`
  return { log: `${tag}:log`, snap: `${tag}:snap`, lock: `${tag}:lock`, deleted: `${tag}:deleted`, history: historyKeysOf(docId).entries }
}
