import { randomUUID } from 'node:crypto'
import { AppError } from '../errors.js'
import { COMMAND_TIMEOUT_MS, isReady } from './redis.js'

// The feed: each stored write is published with the span it covers (`prev`, `last`); a copy that
// misses one (pub/sub drops them while disconnected) reads the stream, which holds everything. The
// append script publishes, so messages leave in stream order, and only writes of documents another
// process subscribes to; with REDIS_WAITAOF this process does, once the write is on disk. A
// process subscribes to the channel of each document it holds, which is how the script counts
// listeners; on one Redis the writes of a run all go in one message on one channel every process
// subscribes to, since a subscriber pays per message more than per byte; on a Redis Cluster each
// goes on its document's channel, in its slot. A message: its format (1), the origin after a
// one-byte length, then per write its document's channel after a two-byte length, `prev` and
// `last` after a one-byte length each, the number of updates and each update after its length,
// four bytes big-endian each.

/**
 * @typedef {object} FeedMessage
 * @property {string} prev the stream entry before these updates
 * @property {string} last the stream entry of the last of them
 * @property {Uint8Array[]} updates
 */
/** @typedef {{ docId: string, message: FeedMessage }} FeedWrite */

const FORMAT = 1
/** Every process's channel for the writes of all documents, on one Redis. */
const ALL_WRITES = 'tandem:{feed}:writes'

export class RedisDocFeed {
  /** who published a message: a process skips its own */
  origin = randomUUID()
  /** how every message this process publishes starts */
  #ownPrefix = encodeFeedMessage(this.origin, [])
  /** @type {Set<string>} documents whose channel this process has subscribed to */
  #channels = new Set()
  /** @type {Set<string>} of those, the ones Redis confirmed since the subscriber last connected */
  #confirmed = new Set()
  /** @type {Promise<void> | null} the subscription to ALL_WRITES since the subscriber last connected */
  #allWrites = null
  #wasDown = false

  /**
   * @param {object} deps @param {import('./redis.js').RedisClient} deps.publisher
   * @param {import('./redis.js').RedisClient} deps.subscriber
   * @param {boolean} deps.sharded SSUBSCRIBE/SPUBLISH (Redis 7) rather than SUBSCRIBE/PUBLISH
   * @param {boolean} deps.oneChannel the append script publishes all its writes in one message on one
   *   channel; not on a Redis Cluster, where a script's channel must be in its keys' slot
   * @param {import('pino').Logger} deps.logger @param {number} [deps.subscribeTimeoutMs] default COMMAND_TIMEOUT_MS
   */
  constructor ({ publisher, subscriber, sharded, oneChannel, logger, subscribeTimeoutMs = COMMAND_TIMEOUT_MS }) {
    this.publisher = publisher
    this.subscriber = subscriber
    this.sharded = sharded
    /** where the append script publishes a run's writes; '' on each document's channel */
    this.allWritesChannel = oneChannel ? ALL_WRITES : ''
    this.logger = logger
    this.subscribeTimeoutMs = subscribeTimeoutMs
    /** @type {(docId: string, message: FeedMessage) => void} set by the cluster wiring */
    this.onMessage = () => {}
    /** @type {() => void} called when the subscriber is back after a disconnect: messages were lost */
    this.onReconnected = () => {}
    subscriber.on(sharded ? 'smessageBuffer' : 'messageBuffer', this.#received)
    subscriber.on('close', () => {
      this.#wasDown = true
      this.#confirmed.clear()
      this.#allWrites = null
    })
    subscriber.on('ready', () => {
      if (!this.#wasDown) return
      this.#wasDown = false
      // The client subscribes again by itself; asking again tells when Redis has each channel.
      for (const docId of this.#channels) this.subscribe(docId).catch(() => {})
      this.onReconnected()
    })
  }

  /**
   * Resolves once Redis confirms; rejects UNAVAILABLE at once while disconnected, or after
   * `subscribeTimeoutMs`: the subscriber queues commands while down, which would park the load and
   * every join behind it. A subscribe given up on may still land; the load's unsubscribe undoes it.
   * @param {string} docId
   */
  async subscribe (docId) {
    if (!isReady(this.subscriber)) throw new AppError('UNAVAILABLE', 'the Redis subscriber is not connected; retry')
    this.#channels.add(docId)
    const subscribed = Promise.all([this.#subscribeTo(channelOf(docId)), this.#subscribeToAllWrites()])
    /** @type {NodeJS.Timeout | undefined} */
    let timer
    const timedOut = new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new AppError('UNAVAILABLE', 'Redis did not confirm a subscription in time; retry')), this.subscribeTimeoutMs)
    })
    try {
      await Promise.race([subscribed, timedOut])
      if (this.#channels.has(docId)) this.#confirmed.add(docId)
    } catch (err) {
      subscribed.catch(() => {})
      throw err instanceof AppError ? err : new AppError('UNAVAILABLE', 'the Redis subscriber refused a subscription; retry', undefined, { cause: err })
    } finally {
      clearTimeout(timer)
    }
  }

  /** Once per connection of the subscriber; a failure is asked again by the next join. */
  #subscribeToAllWrites () {
    if (this.allWritesChannel === '') return Promise.resolve()
    this.#allWrites ??= this.#subscribeTo(this.allWritesChannel).catch((/** @type {unknown} */ err) => {
      this.#allWrites = null
      throw err
    })
    return this.#allWrites
  }

  // Subscribing again to a subscribed channel changes nothing but answers once Redis has it.
  /** @param {string} channel @returns {Promise<void>} */
  async #subscribeTo (channel) {
    await (this.sharded ? this.subscriber.ssubscribe(channel) : this.subscriber.subscribe(channel))
  }

  /**
   * Never rejects; resolves once Redis has taken the unsubscribe or refused it.
   * @param {string} docId
   */
  async unsubscribe (docId) {
    this.#confirmed.delete(docId)
    if (!this.#channels.delete(docId)) return
    const channel = channelOf(docId)
    const unsubscribed = this.sharded ? this.subscriber.sunsubscribe(channel) : this.subscriber.unsubscribe(channel)
    await unsubscribed.catch(() => {})
  }

  /**
   * Whether Redis counts this process among the document's listeners: a writer that does is told
   * apart from the others, so a document no other process holds costs no message.
   * @param {string} docId
   */
  holds (docId) {
    return this.#confirmed.has(docId) && isReady(this.subscriber)
  }

  /** The channel of a document's feed. @param {string} docId */
  channelOf (docId) {
    return channelOf(docId)
  }

  /**
   * With REDIS_WAITAOF only. A failure is logged: the write is durable, and the stream holds it.
   * @param {string} docId @param {FeedMessage} message
   */
  publish (docId, message) {
    const payload = encodeFeedMessage(this.origin, [{ docId, message }])
    const published = this.sharded
      ? this.publisher.spublish(channelOf(docId), payload)
      : this.publisher.publish(channelOf(docId), payload)
    published.catch((/** @type {Error} */ err) => this.logger.debug({ err: err.message, doc: docId }, 'feed publish failed'))
  }

  /** @param {Buffer} _channel @param {Buffer} payload */
  #received = (_channel, payload) => {
    // A process hears its own messages too: they are dropped before anything is decoded.
    if (payload.subarray(0, this.#ownPrefix.length).equals(this.#ownPrefix)) return
    const writes = decodeFeedMessage(payload)?.writes ?? []
    // A message on ALL_WRITES also carries documents this process does not hold, never copied.
    for (const { docId, message: { prev, last, updates } } of writes) {
      // A copy: the client's parser may reuse the buffer a reply was read into.
      if (this.#channels.has(docId)) this.onMessage(docId, { prev, last, updates: updates.map(update => update.slice()) })
    }
  }
}

/** @param {string} origin @param {FeedWrite[]} writes @returns {Buffer} */
export function encodeFeedMessage (origin, writes) {
  /** @type {Uint8Array[]} */
  const parts = [Buffer.from([FORMAT, origin.length]), Buffer.from(origin, 'latin1')]
  for (const { docId, message: { prev, last, updates } } of writes) {
    const channel = Buffer.from(channelOf(docId), 'utf8')
    const head = Buffer.alloc(2)
    head.writeUInt16BE(channel.length)
    parts.push(head, channel, ...[prev, last].flatMap(text => [Buffer.from([text.length]), Buffer.from(text, 'latin1')]), uint32(updates.length))
    for (const update of updates) parts.push(uint32(update.byteLength), update)
  }
  return Buffer.concat(parts)
}

/**
 * The updates are views of `payload`. @param {Buffer} payload
 * @returns {{ origin: string, writes: FeedWrite[] } | null} null when not a message
 */
export function decodeFeedMessage (payload) {
  let offset = 1
  /** @param {number} lengthBytes */
  const text = (lengthBytes, encoding = /** @type {BufferEncoding} */ ('latin1')) => {
    if (offset + lengthBytes > payload.length) return null
    const start = offset + lengthBytes
    const end = start + payload.readUIntBE(offset, lengthBytes)
    if (end > payload.length) return null
    offset = end
    return payload.toString(encoding, start, end)
  }
  if (payload[0] !== FORMAT) return null
  const origin = text(1)
  if (origin === null) return null
  /** @type {FeedWrite[]} */
  const writes = []
  // Bounded: every turn moves `offset` forward by at least 8 bytes, or returns.
  while (offset < payload.length) {
    const channel = text(2, 'utf8')
    const prev = text(1)
    const last = text(1)
    const docId = channel === null ? null : docIdOf(channel)
    if (docId === null || prev === null || last === null || offset + 4 > payload.length) return null
    let count = payload.readUInt32BE(offset)
    offset += 4
    const updates = []
    for (; count > 0; count--) {
      if (offset + 4 > payload.length) return null
      const end = offset + 4 + payload.readUInt32BE(offset)
      if (end > payload.length) return null
      updates.push(new Uint8Array(payload.buffer, payload.byteOffset + offset + 4, end - offset - 4))
      offset = end
    }
    writes.push({ docId, message: { prev, last, updates } })
  }
  return { origin, writes }
}

/** @param {number} value */
function uint32 (value) {
  const bytes = Buffer.alloc(4)
  bytes.writeUInt32BE(value)
  return bytes
}

const PREFIX = 'tandem:{doc:'
const SUFFIX = '}:feed'

/** @param {string} docId */
const channelOf = docId => `${PREFIX}${docId}${SUFFIX}`

/** @param {string} channel */
function docIdOf (channel) {
  if (!channel.startsWith(PREFIX) || !channel.endsWith(SUFFIX)) return null
  return channel.slice(PREFIX.length, -SUFFIX.length)
}
