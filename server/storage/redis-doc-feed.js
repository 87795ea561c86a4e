import { randomUUID } from 'node:crypto'
import { AppError } from '../errors.js'
import { COMMAND_TIMEOUT_MS, isReady } from './redis.js'

// The feed: each stored write is published on its document's channel with the span it covers
// (`prev`, `last`); a copy that misses one (pub/sub drops them while disconnected) reads the
// stream, which holds everything. The append script publishes, so messages leave in stream order,
// and only when another process subscribes; with REDIS_WAITAOF this process does, once the write
// is on disk. A message: origin, `prev`,
// `last` after a one-byte length each, then each update after a four-byte big-endian length.

/**
 * @typedef {object} FeedMessage
 * @property {string} prev the stream entry before these updates
 * @property {string} last the stream entry of the last of them
 * @property {Uint8Array[]} updates
 */

export class RedisDocFeed {
  /** who published a message: a process skips its own */
  origin = randomUUID()
  /** how every message this process publishes starts */
  #ownPrefix = encodeFeedMessage(this.origin, { prev: '', last: '', updates: [] }).subarray(0, 1 + this.origin.length)
  /** @type {Set<string>} documents whose channel this process has subscribed to */
  #channels = new Set()
  /** @type {Set<string>} of those, the ones Redis confirmed since the subscriber last connected */
  #confirmed = new Set()
  #wasDown = false

  /**
   * @param {object} deps @param {import('./redis.js').RedisClient} deps.publisher
   * @param {import('./redis.js').RedisClient} deps.subscriber
   * @param {boolean} deps.sharded SSUBSCRIBE/SPUBLISH (Redis 7) rather than SUBSCRIBE/PUBLISH
   * @param {import('pino').Logger} deps.logger @param {number} [deps.subscribeTimeoutMs] default COMMAND_TIMEOUT_MS
   */
  constructor ({ publisher, subscriber, sharded, logger, subscribeTimeoutMs = COMMAND_TIMEOUT_MS }) {
    this.publisher = publisher
    this.subscriber = subscriber
    this.sharded = sharded
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
    const channel = channelOf(docId)
    this.#channels.add(docId)
    // Subscribing again to a subscribed channel changes nothing but answers once Redis has it.
    const subscribed = this.sharded ? this.subscriber.ssubscribe(channel) : this.subscriber.subscribe(channel)
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
    const payload = encodeFeedMessage(this.origin, message)
    const published = this.sharded
      ? this.publisher.spublish(channelOf(docId), payload)
      : this.publisher.publish(channelOf(docId), payload)
    published.catch((/** @type {Error} */ err) => this.logger.debug({ err: err.message, doc: docId }, 'feed publish failed'))
  }

  /** @param {Buffer} channel @param {Buffer} payload */
  #received = (channel, payload) => {
    // A process hears its own messages too: they are dropped before anything is decoded.
    if (payload.subarray(0, this.#ownPrefix.length).equals(this.#ownPrefix)) return
    const docId = docIdOf(channel.toString())
    if (docId === null) return
    const decoded = decodeFeedMessage(payload)
    if (decoded === null) return
    this.onMessage(docId, decoded.message)
  }
}

/** @param {string} origin @param {FeedMessage} message @returns {Buffer} */
export function encodeFeedMessage (origin, { prev, last, updates }) {
  /** @type {Uint8Array[]} */
  const parts = [origin, prev, last].flatMap(text => [Buffer.from([text.length]), Buffer.from(text, 'latin1')])
  for (const update of updates) {
    const length = Buffer.alloc(4)
    length.writeUInt32BE(update.byteLength)
    parts.push(length, update)
  }
  return Buffer.concat(parts)
}

/** @param {Buffer} payload @returns {{ origin: string, message: FeedMessage } | null} null when not a message */
export function decodeFeedMessage (payload) {
  let offset = 0
  const text = () => {
    const length = payload[offset]
    if (length === undefined || offset + 1 + length > payload.length) return null
    const value = payload.toString('latin1', offset + 1, offset + 1 + length)
    offset += 1 + length
    return value
  }
  const origin = text()
  const prev = text()
  const last = text()
  if (origin === null || prev === null || last === null) return null
  const updates = []
  while (offset < payload.length) {
    if (offset + 4 > payload.length) return null
    const end = offset + 4 + payload.readUInt32BE(offset)
    if (end > payload.length) return null
    // A copy: the client's parser may reuse the buffer a reply was read into.
    updates.push(new Uint8Array(payload.subarray(offset + 4, end)))
    offset = end
  }
  return { origin, message: { prev, last, updates } }
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
