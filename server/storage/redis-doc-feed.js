import { randomUUID } from 'node:crypto'
import { decode, encode } from 'notepack.io'
import { isReady } from './redis.js'

// How processes that share Redis tell each other of a document's stored updates: each write is
// published, after it is stored, on the document's own channel, with the stream ids it spans
// (`prev`, the entry before it, and `last`). A process holding the document applies it to its copy
// and sends it to its editors, and it knows it has missed one when a message's `prev` is not where
// its copy stands: it then reads the stream from there, which holds everything. Pub/sub drops
// messages while a connection is down (the subscriber resubscribing, the publisher reconnecting);
// the stream never does, so nothing acknowledged stays missing.
//
// The channel carries the document's hash tag, so on a Redis Cluster it lives on the shard of the
// document's stream (sharded pub/sub); a classic setup uses ordinary channels.

/**
 * @typedef {object} FeedMessage
 * @property {string} prev the stream entry before these updates
 * @property {string} last the stream entry of the last of them
 * @property {Uint8Array[]} updates
 */

export class RedisDocFeed {
  /** who published a message: a process skips its own */
  #origin = randomUUID()
  /** @type {Set<string>} documents whose channel this process has subscribed to */
  #channels = new Set()
  #wasDown = false

  /**
   * @param {object} deps
   * @param {import('./redis.js').RedisClient} deps.publisher
   * @param {import('./redis.js').RedisClient} deps.subscriber
   * @param {boolean} deps.sharded SSUBSCRIBE/SPUBLISH (Redis 7) rather than SUBSCRIBE/PUBLISH
   * @param {import('pino').Logger} deps.logger
   */
  constructor ({ publisher, subscriber, sharded, logger }) {
    this.publisher = publisher
    this.subscriber = subscriber
    this.sharded = sharded
    this.logger = logger
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
   * Resolves once Redis has confirmed the subscription; rejects at once while the subscriber is
   * disconnected, rather than waiting in its offline queue.
   * @param {string} docId
   */
  async subscribe (docId) {
    if (!isReady(this.subscriber)) throw new Error('the Redis subscriber is not connected')
    const channel = channelOf(docId)
    this.#channels.add(docId)
    // Subscribing again to a subscribed channel changes nothing but answers once Redis has it.
    if (this.sharded) await this.subscriber.ssubscribe(channel)
    else await this.subscriber.subscribe(channel)
  }

  /** @param {string} docId */
  unsubscribe (docId) {
    if (!this.#channels.delete(docId)) return
    const channel = channelOf(docId)
    const unsubscribed = this.sharded ? this.subscriber.sunsubscribe(channel) : this.subscriber.unsubscribe(channel)
    unsubscribed.catch(() => {})
  }

  /**
   * Publishes a stored write. A failure is only logged: the write is durable, and the processes
   * that miss this message find the entries in the stream (see above).
   * @param {string} docId
   * @param {FeedMessage} message
   */
  publish (docId, { prev, last, updates }) {
    const payload = encode([this.#origin, prev, last, updates])
    const published = this.sharded
      ? this.publisher.spublish(channelOf(docId), payload)
      : this.publisher.publish(channelOf(docId), payload)
    published.catch((/** @type {Error} */ err) => this.logger.debug({ err: err.message, doc: docId }, 'feed publish failed'))
  }

  /** @param {Buffer} channel @param {Buffer} payload */
  #received = (channel, payload) => {
    const docId = docIdOf(channel.toString())
    if (docId === null) return
    let decoded
    try {
      decoded = decode(payload)
    } catch {
      return
    }
    if (!Array.isArray(decoded) || decoded.length !== 4) return
    const [origin, prev, last, updates] = decoded
    if (origin === this.#origin || typeof prev !== 'string' || typeof last !== 'string' || !Array.isArray(updates)) return
    this.onMessage(docId, { prev, last, updates: updates.map(update => new Uint8Array(update)) })
  }
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
