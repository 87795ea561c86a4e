import { execMulti } from './redis.js'

// Deliveries in Redis, shared by every process, as y-redis workers share work: a stream read through
// one consumer group, so each delivery is taken by one process; one that process died holding is taken
// over (XAUTOCLAIM) once idle for `claimAfterMs`. A delivery to retry later waits in a sorted set by
// due time and goes back into the stream once due. One hash tag: every step is atomic on a Redis Cluster.

/** @import { Delivery, TakenDelivery } from './outbox.js' */
/** @typedef {import('./outbox.js').Outbox} Outbox */

const STREAM = 'tandem:{webhooks}:outbox'
const WAITING = 'tandem:{webhooks}:retry'
const GROUP = 'senders'
/** Every process that ever sent joins the group under a name of its own: the group forgets the idle ones. */
const FORGET_CONSUMERS_EVERY_MS = 10 * 60 * 1000
const FORGET_CONSUMERS_IDLE_MS = 60 * 60 * 1000
/** @param {string} name */
const windowKey = name => `tandem:webhooks:window:${name}`
/** @param {string} name */
const markKey = name => `tandem:webhooks:mark:${name}`

// All or nothing, and never past the maximum: what waits for a retry counts too.
const ADD_SCRIPT = `
local n = #ARGV - 1
if redis.call('XLEN', KEYS[1]) + redis.call('ZCARD', KEYS[2]) + n > tonumber(ARGV[1]) then return 0 end
for i = 2, #ARGV do redis.call('XADD', KEYS[1], '*', 'd', ARGV[i]) end
return 1
`

const DUE_SCRIPT = `
local due = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, delivery in ipairs(due) do
  redis.call('XADD', KEYS[1], '*', 'd', delivery)
  redis.call('ZREM', KEYS[2], delivery)
end
return #due
`

/**
 * The scripts as `defineCommand` adds them, which ioredis's types cannot see.
 * @typedef {object} OutboxScripts
 * @property {(stream: string, waiting: string, max: number, ...deliveries: string[]) => Promise<0 | 1>} tandemOutboxAdd
 * @property {(stream: string, waiting: string, now: number, max: number) => Promise<number>} tandemOutboxDue
 */

/** @implements {Outbox} */
export class RedisOutbox {
  /** @type {Promise<void> | null} */
  #group = null
  #consumersForgottenAt = Date.now()

  /**
   * @param {import('./redis.js').RedisClient} client
   * @param {{ consumer: string, max: number, claimAfterMs: number }} options `consumer`: this process's name in the group
   */
  constructor (client, { consumer, max, claimAfterMs }) {
    this.client = /** @type {import('./redis.js').RedisClient & OutboxScripts} */ (client)
    this.consumer = consumer
    this.max = max
    this.claimAfterMs = claimAfterMs
    client.defineCommand('tandemOutboxAdd', { numberOfKeys: 2, lua: ADD_SCRIPT })
    client.defineCommand('tandemOutboxDue', { numberOfKeys: 2, lua: DUE_SCRIPT })
  }

  /** @param {Delivery[]} deliveries */
  async add (deliveries) {
    return await this.client.tandemOutboxAdd(STREAM, WAITING, this.max, ...deliveries.map(delivery => JSON.stringify(delivery))) === 1
  }

  /** @param {number} max */
  async take (max) {
    await this.client.tandemOutboxDue(STREAM, WAITING, Date.now(), max)
    if (Date.now() - this.#consumersForgottenAt > FORGET_CONSUMERS_EVERY_MS) await this.#forgetIdleConsumers()
    try {
      return await this.#read(max)
    } catch (err) {
      // A Redis restarted on nothing has no group: made again, read at the next turn.
      if (!/NOGROUP/.test(String(err))) throw err
      this.#group = null
      await this.#ensureGroup()
      return []
    }
  }

  /** @param {number} max @returns {Promise<TakenDelivery[]>} */
  async #read (max) {
    await this.#ensureGroup()
    const [, claimed] = /** @type {[string, [string, string[] | null][]]} */ (
      await this.client.xautoclaim(STREAM, GROUP, this.consumer, this.claimAfterMs, '0-0', 'COUNT', max))
    const entries = claimed.filter(([, fields]) => fields !== null)
    if (entries.length < max) {
      const read = /** @type {[string, [string, string[]][]][] | null} */ (
        await this.client.xreadgroup('GROUP', GROUP, this.consumer, 'COUNT', max - entries.length, 'STREAMS', STREAM, '>'))
      entries.push(...(read?.[0][1] ?? []))
    }
    /** @type {TakenDelivery[]} */
    const taken = []
    for (const [key, fields] of entries) {
      const delivery = deliveryOf(fields)
      // Not written by this code: dropped, or every process would fail on it for good.
      if (delivery) taken.push({ ...delivery, key })
      else await this.remove(/** @type {TakenDelivery} */ ({ key }))
    }
    return taken
  }

  /** Consumers that hold nothing and have not read for long: processes gone, their deliveries taken over. */
  async #forgetIdleConsumers () {
    this.#consumersForgottenAt = Date.now()
    const consumers = /** @type {(string | number)[][]} */ (await this.client.xinfo('CONSUMERS', STREAM, GROUP).catch(() => []))
    for (const fields of consumers) {
      /** @type {Record<string, string | number>} */
      const consumer = {}
      for (let i = 0; i < fields.length; i += 2) consumer[fields[i]] = fields[i + 1]
      if (consumer.name !== this.consumer && Number(consumer.pending) === 0 && Number(consumer.idle) > FORGET_CONSUMERS_IDLE_MS) {
        await this.client.xgroup('DELCONSUMER', STREAM, GROUP, String(consumer.name))
      }
    }
  }

  #ensureGroup () {
    this.#group ??= this.client.xgroup('CREATE', STREAM, GROUP, '0', 'MKSTREAM').then(() => {}, (err) => {
      if (/BUSYGROUP/.test(String(err))) return
      this.#group = null
      throw err
    })
    return this.#group
  }

  /** @param {TakenDelivery} taken */
  async remove ({ key }) {
    await execMulti(this.client.multi().xack(STREAM, GROUP, key).xdel(STREAM, key))
  }

  /** @param {TakenDelivery} taken @param {number} dueAtMs */
  async retry (taken, dueAtMs) {
    await this.#wait(taken, taken.attempts + 1, dueAtMs)
  }

  /** Due again at once, for any process. @param {TakenDelivery} taken */
  async release (taken) {
    await this.#wait(taken, taken.attempts, Date.now())
  }

  /** @param {TakenDelivery} taken @param {number} attempts @param {number} dueAtMs */
  async #wait ({ key, ...delivery }, attempts, dueAtMs) {
    await execMulti(this.client.multi()
      .xack(STREAM, GROUP, key)
      .xdel(STREAM, key)
      .zadd(WAITING, dueAtMs, JSON.stringify({ ...delivery, attempts })))
  }

  async depth () {
    const [streamed, waiting] = await execMulti(this.client.multi().xlen(STREAM).zcard(WAITING))
    return Number(streamed) + Number(waiting)
  }

  /** @param {string} name @param {number} ms */
  async claimWindow (name, ms) {
    const key = windowKey(name)
    if (await this.client.set(key, '1', 'PX', ms, 'NX') === 'OK') return 0
    return Math.max(1, await this.client.pttl(key))
  }

  /** @param {string} name @param {string} value @param {number} ms */
  async replaceMark (name, value, ms) {
    return /** @type {Promise<string | null>} */ (this.client.call('SET', markKey(name), value, 'PX', String(ms), 'GET'))
  }
}

/** @param {string[] | null} fields @returns {Delivery | null} */
function deliveryOf (fields) {
  try {
    const delivery = JSON.parse(fields?.[1] ?? '')
    return typeof delivery?.url === 'string' && typeof delivery.body === 'string' && Number.isInteger(delivery.attempts) ? delivery : null
  } catch {
    return null
  }
}
