// Who holds a seat in each session, across the processes that share Redis: per document a hash
// (`tandem:{doc:<id>}:seats`) with one field per process, `<seats> <expires at, ms>`. A join takes
// its seat with one script that adds up every process's seats and refuses past `maxEditors`, so two
// joins racing on different processes cannot both pass it (asking every process for its count could
// not tell them apart), and a join costs one command instead of a question to every process.
//
// Each process writes only its own field, always the full number of seats it holds here, joins in
// flight included: its writes reach Redis in the order they were sent (one connection), so Redis
// never holds fewer seats for it than it has. A refused join's seat is given back locally and
// reaches Redis with the next write (at worst a seat counted a little too long, never one too few).
// Fields are leases, written again every third of SEAT_LEASE_MS: a process killed without freeing
// its seats holds them until its lease runs out (ROOM_FULL is a retryable refusal meanwhile).

import { isReady } from './redis.js'

// Sums the seats of every field whose lease holds, dropping the others. Redis's own clock, so the
// leases of processes on hosts whose clocks differ compare alike.
const SUM = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local fields = redis.call('HGETALL', KEYS[1])
local others = 0
for i = 1, #fields, 2 do
  local seats, expires = string.match(fields[i + 1], '^(%d+) (%d+)$')
  if not seats or tonumber(expires) <= now then
    if ARGV[1] ~= '' then redis.call('HDEL', KEYS[1], fields[i]) end
  elseif fields[i] ~= ARGV[1] then
    others = others + tonumber(seats)
  end
end
`

// ARGV: process, its seats with this one, maxEditors, lease ms. Returns the editors with this one,
// or -1 when that would exceed maxEditors.
const TAKE_SCRIPT = `${SUM}
if others + tonumber(ARGV[2]) > tonumber(ARGV[3]) then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. (now + tonumber(ARGV[4])))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return others + tonumber(ARGV[2])
`

// ARGV: process, its seats (0 = none), lease ms.
const HOLD_SCRIPT = `
if ARGV[2] == '0' then return redis.call('HDEL', KEYS[1], ARGV[1]) end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. (now + tonumber(ARGV[3])))
return redis.call('PEXPIRE', KEYS[1], ARGV[3])
`

// Only reads: ARGV[1] = '' leaves expired fields in place.
const COUNT_SCRIPT = `${SUM}
return others
`

/**
 * @typedef {object} SeatScripts
 * @property {(key: string, process: string, seats: number, maxEditors: number, leaseMs: number) => Promise<number>} tandemTakeSeat
 * @property {(key: string, process: string, seats: number, leaseMs: number) => Promise<number>} tandemHoldSeats
 * @property {(key: string, process: string) => Promise<number>} tandemCountSeats
 */

/** @typedef {import('./seats.js').Seats} Seats */

/** @implements {Seats} */
export class RedisSeats {
  /** @type {Map<string, number>} seats held in this process per document, joins in flight included */
  #held = new Map()
  #renewal

  /**
   * @param {import('./redis.js').RedisClient} client
   * @param {{ process: string, leaseMs: number, logger: import('pino').Logger }} options `process`:
   *   this process's name in every document's hash, unique in the cluster
   */
  constructor (client, { process, leaseMs, logger }) {
    this.client = /** @type {import('./redis.js').RedisClient & SeatScripts} */ (client)
    this.process = process
    this.leaseMs = leaseMs
    this.logger = logger
    client.defineCommand('tandemTakeSeat', { numberOfKeys: 1, lua: TAKE_SCRIPT })
    client.defineCommand('tandemHoldSeats', { numberOfKeys: 1, lua: HOLD_SCRIPT })
    client.defineCommand('tandemCountSeats', { numberOfKeys: 1, lua: COUNT_SCRIPT })
    this.#renewal = setInterval(() => this.#renewAll(), leaseMs / 3).unref()
    // Leases may have run out while Redis was away: written again as soon as it is back.
    client.on('ready', () => this.#renewAll())
  }

  /**
   * Takes a seat in a document for a join in this process.
   * @param {string} docId
   * @param {number} maxEditors
   * @returns {Promise<number | null>} the editors with this one, or null when the session is full
   */
  async take (docId, maxEditors) {
    const seats = (this.#held.get(docId) ?? 0) + 1
    this.#held.set(docId, seats)
    let editors
    try {
      editors = await this.client.tandemTakeSeat(keyOf(docId), this.process, seats, maxEditors, this.leaseMs)
    } catch (err) {
      this.#giveBack(docId)
      throw err
    }
    if (editors >= 0) return editors
    this.#giveBack(docId)
    return null
  }

  /** Frees a seat taken with `take`. @param {string} docId */
  free (docId) {
    this.#giveBack(docId)
    this.#hold(docId)
  }

  /**
   * Editors per document across every process.
   * @param {string[]} docIds
   * @returns {Promise<number[]>}
   */
  counts (docIds) {
    return Promise.all(docIds.map(docId => this.client.tandemCountSeats(keyOf(docId), '')))
  }

  /** Gives up every seat this process still holds (a stopping process: its editors reconnect elsewhere). */
  async close () {
    clearInterval(this.#renewal)
    const docIds = [...this.#held.keys()]
    this.#held.clear()
    if (!isReady(this.client)) return
    await Promise.all(docIds.map(docId => this.#hold(docId)))
  }

  /** @param {string} docId */
  #giveBack (docId) {
    const seats = (this.#held.get(docId) ?? 1) - 1
    if (seats > 0) this.#held.set(docId, seats)
    else this.#held.delete(docId)
  }

  /**
   * Writes this process's seats in a document as they are now. A failure only costs time: the
   * next renewal writes them again.
   * @param {string} docId
   */
  #hold (docId) {
    return this.client.tandemHoldSeats(keyOf(docId), this.process, this.#held.get(docId) ?? 0, this.leaseMs)
      .catch((/** @type {Error} */ err) => this.logger.debug({ err: err.message, doc: docId }, 'seats not written'))
  }

  #renewAll () {
    for (const docId of this.#held.keys()) this.#hold(docId)
  }
}

/** @param {string} docId */
const keyOf = docId => `tandem:{doc:${docId}}:seats`
