// Seats (seats.js) across processes. Each counter is a hash, one field per process, `<seats>
// <expires at>`; a join takes its seat with one script that sums every process's fields and refuses
// past the limit, so racing joins cannot both pass it. A process writes only its own field, its
// full count, in order on one connection, so Redis never holds fewer seats than it has. Fields are
// leases renewed every third of SEAT_LEASE_MS: a killed process's seats expire.

import { isReady } from './redis.js'
import { EDITORS, countersOf } from './seats.js'

// Sums the live leases but `skip`'s, dropping expired ones unless `skip` is '' (read only). Redis's
// clock, so hosts whose clocks differ compare alike.
const TOTAL = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local function total (key, skip)
  local fields = redis.call('HGETALL', key)
  local sum = 0
  for i = 1, #fields, 2 do
    local seats, expires = string.match(fields[i + 1], '^(%d+) (%d+)$')
    if not seats or tonumber(expires) <= now then
      if skip ~= '' then redis.call('HDEL', key, fields[i]) end
    elseif fields[i] ~= skip then
      sum = sum + tonumber(seats)
    end
  end
  return sum
end
`

// KEYS: the counters taken, then the editors' counter if not among them. ARGV: process, lease ms,
// then per counter this process's seats with this one, and the limit (0 = none). Returns the
// editors, or -k (nothing written) when the k-th counter's limit refuses the seat.
const TAKE_SCRIPT = `${TOTAL}
local taken = (#ARGV - 2) / 2
local lease = tonumber(ARGV[2])
local totals = {}
for k = 1, taken do
  local limit = tonumber(ARGV[2 + 2 * k])
  totals[k] = total(KEYS[k], ARGV[1]) + tonumber(ARGV[1 + 2 * k])
  if limit > 0 and totals[k] > limit then return -k end
end
for k = 1, taken do
  redis.call('HSET', KEYS[k], ARGV[1], ARGV[1 + 2 * k] .. ' ' .. (now + lease))
  redis.call('PEXPIRE', KEYS[k], lease)
end
if #KEYS > taken then return total(KEYS[#KEYS], '') end
return totals[1]
`

// ARGV: process, its seats (0 = none), lease ms.
const HOLD_SCRIPT = `
if ARGV[2] == '0' then return redis.call('HDEL', KEYS[1], ARGV[1]) end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. (now + tonumber(ARGV[3])))
return redis.call('PEXPIRE', KEYS[1], ARGV[3])
`

const COUNT_SCRIPT = `${TOTAL}
return total(KEYS[1], '')
`

/**
 * @typedef {object} SeatScripts
 * @property {(numberOfKeys: number, ...keysAndArgs: (string | number)[]) => Promise<number>} tandemTakeSeat
 * @property {(key: string, process: string, seats: number, leaseMs: number) => Promise<number>} tandemHoldSeats
 * @property {(key: string) => Promise<number>} tandemCountSeats
 */

/** @import { Holder, SeatLimits, Taken } from './seats.js' */
/** @typedef {import('./seats.js').Seats} Seats */

/** @implements {Seats} */
export class RedisSeats {
  /** @type {Map<string, number>} seats held in this process per counter (key), joins in flight included */
  #held = new Map()
  #renewal

  /**
   * @param {import('./redis.js').RedisClient} client
   * @param {{ guard: import('./redis-guard.js').RedisGuard, process: string, leaseMs: number, logger: import('pino').Logger }} options
   *   `process`: this process's field in every counter, unique in the cluster
   */
  constructor (client, { guard, process, leaseMs, logger }) {
    this.client = /** @type {import('./redis.js').RedisClient & SeatScripts} */ (client)
    this.guard = guard
    this.process = process
    this.leaseMs = leaseMs
    this.logger = logger
    client.defineCommand('tandemTakeSeat', { lua: TAKE_SCRIPT })
    client.defineCommand('tandemHoldSeats', { numberOfKeys: 1, lua: HOLD_SCRIPT })
    client.defineCommand('tandemCountSeats', { numberOfKeys: 1, lua: COUNT_SCRIPT })
    this.#renewal = setInterval(() => this.#renewAll(), leaseMs / 3).unref()
    // Leases may have run out while Redis was away: written again as soon as it is back.
    client.on('ready', () => this.#renewAll())
  }

  /** @param {string} docId @param {Holder} holder @param {SeatLimits} limits @returns {Promise<Taken>} */
  async take (docId, holder, limits) {
    const counters = countersOf(holder, limits)
    const keys = counters.map(({ counter }) => keyOf(docId, counter))
    const args = keys.flatMap((key, i) => {
      const seats = (this.#held.get(key) ?? 0) + 1
      this.#held.set(key, seats)
      return [seats, counters[i].limit]
    })
    const read = counters[0]?.counter === EDITORS ? [] : [keyOf(docId, EDITORS)]
    let editors
    try {
      // A refused seat was written nowhere: it says nothing of whether Redis takes writes.
      editors = await this.guard.write(() => this.client.tandemTakeSeat(keys.length + read.length, ...keys, ...read, this.process, this.leaseMs, ...args), editors => editors >= 0)
    } catch (err) {
      for (const key of keys) this.#giveBack(key)
      throw err
    }
    if (editors >= 0) return { editors }
    for (const key of keys) this.#giveBack(key)
    return { full: counters[-editors - 1].full }
  }

  /** Frees a seat taken with `take`. @param {string} docId @param {Holder} holder */
  free (docId, holder) {
    for (const { counter } of countersOf(holder)) {
      const key = keyOf(docId, counter)
      this.#giveBack(key)
      this.#hold(key)
    }
  }

  /** Editors per document across every process. @param {string[]} docIds @returns {Promise<number[]>} */
  counts (docIds) {
    return Promise.all(docIds.map(docId => this.client.tandemCountSeats(keyOf(docId, EDITORS))))
  }

  /** Gives up this process's seats: its editors reconnect elsewhere. */
  async close () {
    clearInterval(this.#renewal)
    const keys = [...this.#held.keys()]
    this.#held.clear()
    if (!isReady(this.client)) return
    await Promise.all(keys.map(key => this.#hold(key)))
  }

  /** @param {string} key */
  #giveBack (key) {
    const seats = (this.#held.get(key) ?? 1) - 1
    if (seats > 0) this.#held.set(key, seats)
    else this.#held.delete(key)
  }

  /** Writes this process's count; a failure costs only time until the next renewal. @param {string} key */
  #hold (key) {
    const seats = this.#held.get(key) ?? 0
    // Dropping a field frees memory, which Redis allows past maxmemory: it proves no write works.
    return this.guard.write(() => this.client.tandemHoldSeats(key, this.process, seats, this.leaseMs), () => seats > 0)
      .catch((/** @type {Error} */ err) => this.logger.debug({ err: err.message, key }, 'seats not written'))
  }

  #renewAll () {
    for (const key of this.#held.keys()) this.#hold(key)
  }
}

/** One hash tag keeps a document's counters in one Cluster slot. @param {string} docId @param {string} counter */
const keyOf = (docId, counter) => `tandem:{doc:${docId}}:${counter}`
