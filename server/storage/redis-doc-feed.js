import { randomUUID } from 'node:crypto'
import { AppError } from '../errors.js'
import { COMMAND_TIMEOUT_MS, isReady } from './redis.js'

// How processes that share Redis tell each other of a document's stored updates: each write is
// published, after it is stored, on the document's own channel, with the stream ids it spans
// (`prev`, the entry before it, and `last`). A process holding the document applies it to its copy
// and sends it to its editors, and it knows it has missed one when a message's `prev` is not where
// its copy stands: it then reads the stream from there, which holds everything. Pub/sub drops
// messages while a connection is down (the subscriber resubscribing, the publisher reconnecting);
// the stream never does, so nothing acknowledged stays missing.
//
// The append script publishes the message itself, in the same step as the XADDs
// (redis-doc-store.js): messages then leave Redis in the order of the stream, so a process sees a gap
// only when a message was really lost. Published by each process after its append returned, writes
// of different processes would often arrive out of order, and every one of those would cost each
// holder a read of the stream. Only with REDIS_WAITAOF does the process publish, once the write is
// on disk: no process may hold an update that a Redis crash could still take back.
//
// The channel carries the document's hash tag, so on a Redis Cluster it lives on the shard of the
// document's stream (sharded pub/sub); a classic setup uses ordinary channels.
//
// A message is bytes, the same whether Lua or this file wrote it: the origin, `prev` and `last`, each
// after a one-byte length, then each update after a four-byte big-endian length.

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
  #wasDown = false

  /**
   * @param {object} deps
   * @param {import('./redis.js').RedisClient} deps.publisher
   * @param {import('./redis.js').RedisClient} deps.subscriber
   * @param {boolean} deps.sharded SSUBSCRIBE/SPUBLISH (Redis 7) rather than SUBSCRIBE/PUBLISH
   * @param {import('pino').Logger} deps.logger
   * @param {number} [deps.subscribeTimeoutMs] how long a subscribe waits for Redis to confirm it, ms
   *   (default COMMAND_TIMEOUT_MS, as the data connection's commands)
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
    subscriber.on('close', () => { this.#wasDown = true })
    subscriber.on('ready', () => {
      if (!this.#wasDown) return
      this.#wasDown = false
      this.onReconnected()
    })
  }

  /**
   * Resolves once Redis has confirmed the subscription; rejects UNAVAILABLE at once while the
   * subscriber is disconnected, and after `subscribeTimeoutMs` without a reply. The subscriber
   * queues commands while disconnected (its subscriptions must survive a reconnect): a drop after
   * the check would otherwise park the subscribe, the document's load and every join waiting on it
   * until Redis returns. A subscribe given up on may still land; the failed load's unsubscribe,
   * queued behind it, undoes it.
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
    } catch (err) {
      subscribed.catch(() => {})
      throw err instanceof AppError ? err : new AppError('UNAVAILABLE', 'the Redis subscriber refused a subscription; retry', undefined, { cause: err })
    } finally {
      clearTimeout(timer)
    }
  }

  /** @param {string} docId */
  unsubscribe (docId) {
    if (!this.#channels.delete(docId)) return
    const channel = channelOf(docId)
    const unsubscribed = this.sharded ? this.subscriber.sunsubscribe(channel) : this.subscriber.unsubscribe(channel)
    unsubscribed.catch(() => {})
  }

  /** The channel of a document's feed. @param {string} docId */
  channelOf (docId) {
    return channelOf(docId)
  }

  /**
   * Publishes a stored write from this process (with REDIS_WAITAOF; see above). A failure is only
   * logged: the write is durable, and the processes that miss this message find the entries in the
   * stream.
   * @param {string} docId
   * @param {FeedMessage} message
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

/**
 * @param {string} origin
 * @param {FeedMessage} message
 * @returns {Buffer}
 */
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

/**
 * The message, or null when the bytes are not one.
 * @param {Buffer} payload
 * @returns {{ origin: string, message: FeedMessage } | null}
 */
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
  /** @type {Uint8Array[]} */
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
