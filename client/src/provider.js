import { ObservableV2 } from 'lib0/observable'
import { Awareness } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { CLOSE_REASONS, ERRORS, EVENTS } from '../../server/protocol.js'
import { AwarenessSync } from './awareness-sync.js'
import { backoffDelay } from './backoff.js'
import { PendingUpdates } from './pending-updates.js'
import { providerOptions } from './provider-options.js'
import { claimDoc, createSocket } from './socket.js'

export const STATUS = Object.freeze({ CONNECTING: 'connecting', CONNECTED: 'connected', DISCONNECTED: 'disconnected' })

/** @typedef {typeof STATUS[keyof typeof STATUS]} Status */

/**
 * @typedef {object} Refusal what the server refused, as the `refused` event reports it
 * @property {string} event `doc:join` or `doc:update`
 * @property {import('../../server/protocol.js').ErrorCode} code
 * @property {string} message
 * @property {boolean} retry whether the provider will try again (after a backoff)
 */

/**
 * @typedef {{
 *   status: (event: { status: Status }) => void,
 *   sync: (synced: boolean) => void,
 *   synced: (synced: boolean) => void,
 *   unsyncedChanges: (event: { number: number }) => void,
 *   refused: (refusal: Refusal) => void,
 *   closed: (event: { reason: string }) => void,
 *   'connection-error': (error: Error) => void
 * }} ProviderEvents
 */

// Where this provider stands with the server for its document. A reply that arrives after the
// membership it belongs to has ended is stale; `#membershipEpoch` tells them apart.
const NONE = 0
const JOINING = 1
const JOINED = 2

/**
 * Connects a Y.Doc to one document of a Tandem server (docs/PROTOCOL.md), in browsers and in Node.
 * Shaped like y-websocket's WebsocketProvider: `status`, `sync`/`synced`, `connect()`,
 * `disconnect()`, `destroy()`, `awareness`; plus Hocuspocus's `unsyncedChanges`, a `refused` event
 * for what the server turned down, and `closed` when the session is deleted.
 *
 * @extends {ObservableV2<ProviderEvents>}
 */
export class SocketIOProvider extends ObservableV2 {
  /** @type {Status} */
  #status = STATUS.DISCONNECTED
  #synced = false
  #membership = NONE
  #membershipEpoch = 0
  #shouldConnect = false
  #pending = new PendingUpdates()
  #lastCount = 0
  /** @type {'editor' | 'viewer' | null} what the last join allowed (a viewer's edits are refused) */
  role = null
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #retryTimer
  #retryAttempt = 0
  #ownsSocket
  #ownsAwareness
  #awarenessSync
  #releaseDoc

  /**
   * @param {string} serverUrl e.g. `https://tandem.example` (browsers: `location.origin`)
   * @param {string} docId the session id
   * @param {Y.Doc} ydoc
   * @param {import('./provider-options.js').ProviderOptions} [options]
   */
  constructor (serverUrl, docId, ydoc, options = {}) {
    super()
    this.options = providerOptions(serverUrl, docId, options)
    this.serverUrl = serverUrl
    this.docId = docId
    this.doc = ydoc
    this.#ownsAwareness = !this.options.awareness
    this.awareness = this.options.awareness ?? new Awareness(ydoc)
    this.#ownsSocket = !this.options.socket
    /** @type {import('./socket.js').TandemSocket} */
    this.socket = this.options.socket ??
      createSocket(serverUrl, { token: this.options.token, transports: [...this.options.transports], autoConnect: false })
    this.#releaseDoc = claimDoc(this.socket, docId)

    for (const [event, listener] of this.#socketListeners()) this.socket.on(event, listener)
    ydoc.on('update', this.#onLocalUpdate)
    this.#awarenessSync = new AwarenessSync(this.awareness, {
      origin: this,
      send: update => this.socket.emit(EVENTS.AWARENESS, { doc: this.docId, update })
    })
    // Tell the others this editor is gone before the page is, rather than after the server notices.
    if (typeof window !== 'undefined') window.addEventListener('beforeunload', this.#onUnload)

    if (this.options.connect) this.connect()
  }

  /** `connecting`, `connected` (joined and synced) or `disconnected`. */
  get status () {
    return this.#status
  }

  /** Whether the document holds everything the server had when it was last joined. */
  get synced () {
    return this.#synced
  }

  /** Local updates the server has not acknowledged (so not yet stored). */
  get unsyncedChanges () {
    return this.#pending.size
  }

  /** Joins the document, connecting the socket first if needed; rejoins after every reconnect. */
  connect () {
    this.#shouldConnect = true
    if (this.socket.connected) {
      this.#join()
      return
    }
    this.#setStatus(STATUS.CONNECTING)
    if (!this.socket.active) this.socket.connect()
  }

  /**
   * Leaves the document; edits made meanwhile are kept and sent on `connect()`. A shared socket
   * stays open for its other documents.
   */
  disconnect () {
    this.#shouldConnect = false
    const held = this.#membership !== NONE
    this.#endMembership()
    if (this.#ownsSocket) {
      this.socket.disconnect()
    } else if (held && this.socket.connected) {
      // The server ignores an event without an ACK callback, so pass one even though nothing waits.
      this.socket.emit(EVENTS.LEAVE, { doc: this.docId }, () => {})
    }
    this.#setStatus(STATUS.DISCONNECTED)
  }

  /**
   * What this provider listens to on the (possibly shared) socket: added in the constructor,
   * removed by `destroy`.
   * @returns {[any, (...args: any[]) => void][]} event names typed loosely: they span reserved and protocol events
   */
  #socketListeners () {
    return [
      ['connect', this.#onConnect],
      ['disconnect', this.#onDisconnect],
      ['connect_error', this.#onConnectError],
      [EVENTS.UPDATE, this.#onRemoteUpdate],
      [EVENTS.AWARENESS, this.#onRemoteAwareness],
      [EVENTS.CLOSED, this.#onClosed]
    ]
  }

  destroy () {
    this.disconnect()
    for (const [event, listener] of this.#socketListeners()) this.socket.off(event, listener)
    this.doc.off('update', this.#onLocalUpdate)
    this.#awarenessSync.destroy()
    if (typeof window !== 'undefined') window.removeEventListener('beforeunload', this.#onUnload)
    this.#releaseDoc()
    // An awareness made here runs a timer nobody else would stop.
    if (this.#ownsAwareness) this.awareness.destroy()
    super.destroy()
  }

  async #join () {
    if (!this.#shouldConnect || !this.socket.connected || this.#membership !== NONE) return
    this.#membership = JOINING
    const epoch = this.#membershipEpoch
    this.#setStatus(STATUS.CONNECTING)
    const reply = await this.#request(EVENTS.JOIN, {
      doc: this.docId,
      sv: Y.encodeStateVector(this.doc),
      // On a shared socket the handshake's token may be another session's: each join carries its own.
      ...(this.options.token === undefined ? {} : { token: this.options.token })
    })
    if (epoch !== this.#membershipEpoch) return
    if (!reply?.ok) {
      this.#membership = NONE
      // No reply in time counts as retryable: the join may have gone through, and joining again is allowed.
      if (!reply || this.#refused(EVENTS.JOIN, reply.error)) this.#retryLater(() => this.#join(), reply?.error)
      else this.disconnect()
      return
    }
    this.#membership = JOINED
    this.#retryAttempt = 0
    this.role = reply.role
    Y.applyUpdate(this.doc, new Uint8Array(reply.update), this)
    // What the server lacks is the diff against its state vector plus every update never
    // acknowledged: its state vector reflects memory, which can hold an update whose write failed.
    this.#pending.add(Y.encodeStateAsUpdate(this.doc, new Uint8Array(reply.sv)))
    this.#countChanged()
    this.#resend()
    this.#awarenessSync.joined(new Uint8Array(reply.awareness))
    this.#setSynced(true)
    this.#setStatus(STATUS.CONNECTED)
  }

  /** @param {Uint8Array} update */
  async #push (update) {
    const epoch = this.#membershipEpoch
    const reply = await this.#request(EVENTS.UPDATE, { doc: this.docId, update })
    if (reply?.ok) {
      this.#retryAttempt = 0
      if (this.#pending.delete(update)) this.#countChanged()
      return
    }
    // Once the membership has ended, the rejoin sends everything pending: nothing to do here.
    if (epoch !== this.#membershipEpoch) return
    if (!reply) {
      this.#retryLater(() => this.#resend())
    } else if (reply.error.code === 'NOT_JOINED' || reply.error.code === 'OUT_OF_SYNC') {
      // Not a verdict on the update: the server no longer counts this socket as joined, or lacks
      // what the update builds on. Rejoin, which sends the whole difference.
      this.#endMembership()
      this.#join()
    } else if (this.#refused(EVENTS.UPDATE, reply.error)) {
      this.#retryLater(() => this.#resend(), reply.error)
    } else if (this.#pending.delete(update)) {
      // A final refusal (TOO_LARGE, INVALID_UPDATE, FORBIDDEN, …): sending it again cannot succeed.
      this.#countChanged()
    }
  }

  #resend () {
    if (this.#membership !== JOINED) return
    const update = this.#pending.collapse()
    this.#countChanged()
    if (update) this.#push(update)
  }

  /**
   * Resolves with the ACK, or undefined if none came within `ackTimeoutMs` or the socket dropped.
   * @param {string} event
   * @param {object} payload
   * @returns {Promise<any>}
   */
  #request (event, payload) {
    return this.socket.timeout(this.options.ackTimeoutMs).emitWithAck(/** @type {any} */ (event), payload)
      .catch(() => undefined)
  }

  /**
   * Reports a refusal and says whether it is worth retrying (the `retry` flag of its code).
   * @param {string} event
   * @param {import('../../server/protocol.js').ErrorBody} error
   */
  #refused (event, { code, message }) {
    const retry = ERRORS[code]?.retry ?? false
    this.emit('refused', [{ event, code, message, retry }])
    return retry
  }

  /**
   * @param {() => void} action
   * @param {import('../../server/protocol.js').ErrorBody} [error] a RATE_LIMITED refusal says how long to wait at least
   */
  #retryLater (action, error) {
    if (this.#retryTimer) return
    const backoff = backoffDelay(this.#retryAttempt++, { minMs: this.options.retryDelayMs, maxMs: this.options.maxRetryDelayMs })
    const retryAfterMs = /** @type {{ retryAfterMs?: unknown } | undefined} */ (error?.details)?.retryAfterMs
    const delay = Math.max(backoff, typeof retryAfterMs === 'number' ? retryAfterMs : 0)
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined
      action()
    }, delay)
  }

  /** Forgets the membership: replies still in flight for it are ignored, the next join starts afresh. */
  #endMembership () {
    this.#membership = NONE
    this.#membershipEpoch++
    clearTimeout(this.#retryTimer)
    this.#retryTimer = undefined
    this.#setSynced(false)
    this.#awarenessSync.left()
  }

  #onConnect = () => { this.#join() }

  /** @param {string} reason */
  #onDisconnect = (reason) => {
    this.#endMembership()
    // socket.io-client reconnects by itself, with backoff, except after a server-side disconnect.
    if (reason === 'io server disconnect' && this.#shouldConnect) this.#retryLater(() => this.socket.connect())
    this.#setStatus(this.#shouldConnect ? STATUS.CONNECTING : STATUS.DISCONNECTED)
  }

  /** @param {Error & { data?: import('../../server/protocol.js').ErrorBody }} error */
  #onConnectError = (error) => {
    // An inactive socket after a connect error was refused by the server and will not retry.
    if (!this.socket.active) this.#setStatus(STATUS.DISCONNECTED)
    if (error.data?.code) this.#refused('connect', error.data)
    this.emit('connection-error', [error])
  }

  /** @param {{ doc: string, update: Uint8Array }} payload */
  #onRemoteUpdate = ({ doc, update }) => {
    if (doc === this.docId) Y.applyUpdate(this.doc, new Uint8Array(update), this)
  }

  /** @param {{ doc: string, update: Uint8Array }} payload */
  #onRemoteAwareness = ({ doc, update }) => {
    if (doc === this.docId) this.#awarenessSync.receive(new Uint8Array(update))
  }

  /** @param {{ doc: string, reason: string }} payload */
  #onClosed = ({ doc, reason }) => {
    if (doc !== this.docId) return
    this.#endMembership()
    this.emit('closed', [{ reason }])
    if (reason === CLOSE_REASONS.RELOAD) this.#join()
    else this.disconnect()
  }

  /** @param {Uint8Array} update @param {unknown} origin */
  #onLocalUpdate = (update, origin) => {
    if (origin === this) return
    this.#pending.add(update)
    this.#countChanged()
    if (this.#membership === JOINED) this.#push(update)
  }

  #onUnload = () => { this.#awarenessSync.removeSelf() }

  /** @param {Status} status */
  #setStatus (status) {
    if (status === this.#status) return
    this.#status = status
    this.emit('status', [{ status }])
  }

  /** @param {boolean} synced */
  #setSynced (synced) {
    if (synced === this.#synced) return
    this.#synced = synced
    this.emit('sync', [synced])
    this.emit('synced', [synced])
  }

  #countChanged () {
    const number = this.#pending.size
    if (number === this.#lastCount) return
    this.#lastCount = number
    this.emit('unsyncedChanges', [{ number }])
  }
}
