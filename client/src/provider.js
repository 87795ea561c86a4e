import { ObservableV2 } from 'lib0/observable'
import { Awareness } from 'y-protocols/awareness'
import * as Y from 'yjs'
import { ERRORS } from '../../isomorphic/error-codes.js'
import { CLOSE_REASONS, EVENTS, ROLES } from '../../isomorphic/events.js'
import { AwarenessSync } from './awareness-sync.js'
import { backoffDelay } from './backoff.js'
import { JoinToken } from './join-token.js'
import { PendingUpdates } from './pending-updates.js'
import { providerOptions } from './provider-options.js'
import { claimDoc, createSocket, isTokenRequest } from './socket.js'

export const STATUS = Object.freeze({ CONNECTING: 'connecting', CONNECTED: 'connected', DISCONNECTED: 'disconnected' })

/** @typedef {typeof STATUS[keyof typeof STATUS]} Status */

/**
 * @typedef {object} Refusal what the server refused, as the `refused` event reports it
 * @property {string} event `doc:join` or `doc:update`
 * @property {import('../../isomorphic/error-codes.js').ErrorCode} code
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
 *   blocked: (refusal: Refusal | null) => void,
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
 * An update refused for a reason that may pass (TOO_LARGE: over a limit of the server's on an update
 * or a document, its size or the clients it holds edits from, which may be raised or the document
 * compacted; RATE_LIMITED; UNAVAILABLE; INTERNAL) is
 * kept and retried with backoff. Until the server takes it, later edits, which build on it, are held
 * back too: `blockedBy` holds the refusal, and the `blocked` event fires with it, then with `null`
 * once the update is stored. An update refused for good (INVALID_UPDATE, FORBIDDEN, …) blocks the
 * provider the same way, for as long as it lives: edits built on it can never be stored.
 *
 * Give `token` as a function to outlive short-lived join tokens: it is first called when the server
 * refuses an attempt without a token (a server with auth off never does), then for a fresh one on
 * every (re)connect and join, and again after an UNAUTHORIZED refusal. A viewer (the join's `role`)
 * sends no document updates: its local edits stay local, counted in `unsyncedChanges`.
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
  /** the `maxUpdateBytes` of the last join; older servers do not send it */
  #maxUpdateBytes = Infinity
  /** @type {Refusal | null} */
  #blockedBy = null
  /** @type {'editor' | 'viewer' | null} what the last join allowed (a viewer's edits are refused) */
  role = null
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #retryTimer
  #retryAttempt = 0
  /** rejoins for being out of sync since the server last took an update or a join left it in sync */
  #resyncs = 0
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #missingTimer
  /** the transport is open and the server has not yet accepted the socket (see #onTransportClose) */
  #transportOpen = false
  /** the token of this provider's joins, and of its own socket's handshakes */
  #joinToken
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
    this.#joinToken = new JoinToken(this.options.token)
    // Reported here; the attempt it failed is retried with backoff (the backend may be back by then).
    this.#joinToken.on('error', error => this.emit('connection-error', [error]))
    this.#ownsSocket = !this.options.socket
    /** @type {import('./socket.js').TandemSocket} */
    this.socket = this.options.socket ??
      createSocket(serverUrl, {
        token: this.#joinToken,
        transports: [...this.options.transports],
        autoConnect: false,
        // In the handshake's address, so a balancer can send a session's editors to one process.
        query: { session: docId }
      })
    this.#releaseDoc = claimDoc(this.socket, docId)

    for (const [event, listener] of this.#socketListeners()) this.socket.on(event, listener)
    this.socket.io.on('open', this.#onTransportOpen)
    this.socket.io.on('close', this.#onTransportClose)
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

  /**
   * Whether the document holds everything the server had when it was last joined, and nothing it
   * cannot integrate (an update whose predecessor never arrived).
   */
  get synced () {
    return this.#synced && !holdsMissing(this.doc)
  }

  /** Local updates the server has not acknowledged (so not yet stored). */
  get unsyncedChanges () {
    return this.#pending.size
  }

  /** Whether any local update is not stored yet (Hocuspocus's `hasUnsyncedChanges`). */
  get hasUnsyncedChanges () {
    return this.#pending.size > 0
  }

  /**
   * Whether the provider means to be joined: true from `connect()` (or the constructor, unless
   * `connect: false`) until `disconnect()` or `destroy()`; it reconnects and rejoins meanwhile.
   * y-websocket's `shouldConnect`.
   */
  get shouldConnect () {
    return this.#shouldConnect
  }

  /** Whether the document is joined: y-websocket's `wsconnected`, here `status === 'connected'`. */
  get wsconnected () {
    return this.#status === STATUS.CONNECTED
  }

  /** Whether the provider is (re)connecting or (re)joining: y-websocket's `wsconnecting`. */
  get wsconnecting () {
    return this.#status === STATUS.CONNECTING
  }

  /**
   * The refusal that holds this provider's edits back, or null. Tell the user: nothing typed since
   * is stored until the server accepts the refused update.
   * @returns {Refusal | null}
   */
  get blockedBy () {
    return this.#blockedBy
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
    this.socket.io.off('open', this.#onTransportOpen)
    this.socket.io.off('close', this.#onTransportClose)
    this.doc.off('update', this.#onLocalUpdate)
    this.#awarenessSync.destroy()
    if (typeof window !== 'undefined') window.removeEventListener('beforeunload', this.#onUnload)
    this.#releaseDoc()
    // An awareness made here runs a timer nobody else would stop.
    if (this.#ownsAwareness) this.awareness.destroy()
    this.#joinToken.destroy()
    super.destroy()
  }

  async #join () {
    if (!this.#shouldConnect || !this.socket.connected || this.#membership !== NONE) return
    this.#membership = JOINING
    const epoch = this.#membershipEpoch
    this.#setStatus(STATUS.CONNECTING)
    let token
    try {
      token = await this.#joinToken.get()
    } catch {
      // Reported as `connection-error`; the backend may be back by the next attempt.
      if (epoch !== this.#membershipEpoch) return
      this.#membership = NONE
      this.#retryLater(() => this.#join())
      return
    }
    if (epoch !== this.#membershipEpoch) return
    const reply = await this.#request(EVENTS.JOIN, {
      doc: this.docId,
      sv: Y.encodeStateVector(this.doc),
      // On a shared socket the handshake's token may be another session's: each join carries its own.
      ...(token === undefined ? {} : { token })
    })
    if (epoch !== this.#membershipEpoch) return
    if (!reply?.ok) {
      this.#membership = NONE
      // Refused for want of a token this join did not carry: not a failure; join again with one.
      if (reply && this.#joinToken.askedBy(reply.error.code)) {
        this.#join()
        return
      }
      // No reply in time counts as retryable: the join may have gone through, and joining again is allowed.
      const renewable = this.#joinToken.renewable
      if (!reply || this.#refused(EVENTS.JOIN, reply.error, renewable).retry) this.#retryLater(() => this.#join(), reply?.error)
      else this.disconnect()
      return
    }
    this.#membership = JOINED
    // While blocked, or holding updates (the next ACK ends the backoff), it keeps growing across
    // rejoins, so that they cannot loop quickly: a reload caused by this editor's own update (a write
    // refused, an update failing to apply) comes back on every resend.
    if (!this.#blockedBy && this.#pending.size === 0) this.#retryAttempt = 0
    this.role = reply.role
    const { maxUpdateBytes } = reply
    this.#maxUpdateBytes = Number.isSafeInteger(maxUpdateBytes) && maxUpdateBytes > 0 ? maxUpdateBytes : Infinity
    Y.applyUpdate(this.doc, new Uint8Array(reply.update), this)
    // A viewer's updates would all be refused (FORBIDDEN): it sends none, not even the diff below.
    if (this.role !== ROLES.VIEWER) {
      // What the server lacks is every update never acknowledged (its state vector reflects memory,
      // which can hold an update whose write failed) plus what else its state vector misses.
      this.#pending.addMissing(this.doc, new Uint8Array(reply.sv))
      this.#countChanged()
      this.#resend()
    }
    this.#awarenessSync.joined(new Uint8Array(reply.awareness))
    this.#setSynced(!holdsMissing(this.doc))
    if (this.#synced && this.#pending.size === 0) this.#resyncs = 0
    this.#setStatus(STATUS.CONNECTED)
    this.#watchMissing()
  }

  /**
   * An update that builds on one this document lacks is held back by Yjs, invisible. The server
   * sends every update in order, so the missing one was lost on the way (a dropped connection
   * between servers): if it has not arrived within `missingGraceMs`, rejoin, which sends the whole
   * difference from the server.
   */
  #watchMissing () {
    if (this.#missingTimer || !holdsMissing(this.doc)) return
    this.#missingTimer = setTimeout(() => {
      this.#missingTimer = undefined
      if (this.#membership !== JOINED || !holdsMissing(this.doc)) return
      this.#setSynced(false)
      this.#resync()
    }, this.options.missingGraceMs)
  }

  /**
   * @param {Uint8Array} update
   * @param {boolean} [probe] sent alone while blocked: its answer says whether the block is over
   */
  async #push (update, probe = false) {
    const epoch = this.#membershipEpoch
    const reply = await this.#request(EVENTS.UPDATE, { doc: this.docId, update })
    if (reply?.ok) {
      if (this.#pending.delete(update)) this.#countChanged()
      this.#resyncs = 0
      // An ACK for an update sent before the block says nothing about the refused one.
      if (!probe && this.#blockedBy) return
      this.#retryAttempt = 0
      if (probe) this.#unblock()
      return
    }
    // Once the membership has ended, the rejoin sends everything pending: nothing to do here.
    if (epoch !== this.#membershipEpoch) return
    const code = reply?.error.code
    if (!reply) {
      this.#retryLater(() => this.#resend())
    } else if (code === 'OUT_OF_SYNC' && this.#blockedBy) {
      // An update sent before the block builds on the refused one; the probe carries it later.
      // A probe itself out of sync needs a rejoin, after the backoff: each would meet the same refusal.
      if (probe) this.#rejoin(true)
    } else if (code === 'NOT_JOINED') {
      // Not a verdict on the update: the server no longer counts this socket as joined. Rejoin,
      // which sends the whole difference.
      this.#rejoin(false)
    } else if (code === 'OUT_OF_SYNC') {
      // The server lacks what the update builds on: the rejoin sends the whole difference.
      this.#resync()
    } else {
      const refusal = this.#refused(EVENTS.UPDATE, reply.error)
      if (refusal.retry) {
        // Later edits build on the refused update: sent meanwhile, they would come back OUT_OF_SYNC
        // and start a rejoin at once, whatever wait the server asked for. They are held instead.
        this.#setBlocked(refusal)
        this.#retryLater(() => this.#resend(), reply.error)
      } else {
        // A final refusal (INVALID_UPDATE, FORBIDDEN, …): sending it again cannot succeed, and every
        // later edit builds on what it holds (a rejoin would send it again, merged with them). The
        // provider stays blocked by it, the update kept and counted, rather than report edits as
        // saved that never will be; the app tells the user and opens the document afresh.
        this.#setBlocked(refusal)
      }
    }
  }

  /**
   * Sends everything pending, merged into as few updates as the server accepts. While blocked,
   * only the first goes, as a probe: the rest build on it, and would come back OUT_OF_SYNC.
   */
  #resend () {
    if (this.#membership !== JOINED || this.role === ROLES.VIEWER) return
    const updates = this.#pending.collapse(this.#maxUpdateBytes)
    this.#countChanged()
    if (!this.#blockedBy) {
      for (const update of updates) this.#push(update)
    } else if (updates.length > 0) {
      this.#push(updates[0], true)
    } else {
      this.#setBlocked(null)
    }
  }

  /** The refused update is stored (or dropped): send what was held back behind it. */
  #unblock () {
    this.#setBlocked(null)
    this.#resend()
  }

  /** @param {boolean} later after the backoff rather than at once */
  #rejoin (later) {
    this.#endMembership()
    if (!later) {
      this.#join()
      return
    }
    this.#setStatus(STATUS.CONNECTING)
    this.#retryLater(() => this.#join())
  }

  /**
   * Rejoins to get back in sync: at once the first time, then after a growing, jittered wait until
   * the server takes an update or a join leaves the document in sync, so that a document the server
   * cannot bring in sync costs it a few joins, not a loop.
   */
  #resync () {
    const attempt = this.#resyncs++
    if (attempt === 0) {
      this.#rejoin(false)
      return
    }
    this.#endMembership()
    this.#setStatus(STATUS.CONNECTING)
    const delay = backoffDelay(attempt - 1, { minMs: this.options.retryDelayMs, maxMs: this.options.maxRetryDelayMs })
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined
      this.#join()
    }, delay)
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
   * Reports a refusal and returns it; its `retry` (the flag of its code) says whether it is worth
   * retrying. UNAUTHORIZED is, when a token function can fetch a fresh token.
   * @param {string} event
   * @param {import('../../isomorphic/error-codes.js').ErrorBody} error
   * @param {boolean} [renewable] whether a new token may be fetched for the retry
   * @returns {Refusal}
   */
  #refused (event, { code, message }, renewable = false) {
    const retry = (ERRORS[code]?.retry ?? false) || (renewable && code === 'UNAUTHORIZED')
    const refusal = { event, code, message, retry }
    this.emit('refused', [refusal])
    return refusal
  }

  /**
   * @param {() => void} action
   * @param {import('../../isomorphic/error-codes.js').ErrorBody} [error] a RATE_LIMITED refusal says how long to wait at least
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
    clearTimeout(this.#missingTimer)
    this.#missingTimer = undefined
    this.#setSynced(false)
    this.#awarenessSync.left()
  }

  #onConnect = () => {
    this.#transportOpen = false
    this.#join()
  }

  /** @param {string} reason */
  #onDisconnect = (reason) => {
    this.#endMembership()
    // socket.io-client reconnects by itself, with backoff, except after a server-side disconnect.
    if (reason === 'io server disconnect' && this.#shouldConnect) this.#retryLater(() => this.socket.connect())
    this.#setStatus(this.#shouldConnect ? STATUS.CONNECTING : STATUS.DISCONNECTED)
  }

  /** @param {Error & { data?: import('../../isomorphic/error-codes.js').ErrorBody }} error */
  #onConnectError = (error) => {
    // The socket asked for its token and is connecting again with it: nothing was refused.
    if (isTokenRequest(error)) return
    // The handshake's token comes from the socket's `auth`: renewable when that is a function.
    const refusal = error.data?.code ? this.#refused('connect', error.data, typeof this.socket.auth === 'function') : null
    // An inactive socket after a connect error was refused by the server, and socket.io-client will
    // not retry: this provider does, with backoff, when the refusal may pass later (a fresh token,
    // a rate limit's wait).
    if (!this.socket.active) {
      if (refusal?.retry && this.#shouldConnect) {
        this.#setStatus(STATUS.CONNECTING)
        this.#retryLater(() => { if (this.#shouldConnect && !this.socket.active) this.socket.connect() }, error.data)
      } else {
        this.#setStatus(STATUS.DISCONNECTED)
      }
    }
    this.emit('connection-error', [error])
  }

  /**
   * The connection closed under the socket. A `parse error` means the server's packets do not decode
   * with Tandem's parser; a close after the transport opened but before the server accepted the
   * socket is how a server on another parser turns this client away. Retrying cannot fix either,
   * and socket.io-client would otherwise retry in silence.
   * @param {string} reason
   * @param {unknown} [description]
   */
  #onTransportClose = (reason, description) => {
    const unaccepted = this.#transportOpen && !this.socket.connected && reason === 'transport close'
    this.#transportOpen = false
    if (reason !== 'parse error' && !unaccepted) return
    const what = reason === 'parse error'
      ? `cannot decode what ${this.serverUrl} sends${description instanceof Error ? `: ${description.message}` : ''}.`
      : `${this.serverUrl} closed the connection before accepting it.`
    this.emit('connection-error', [new Error(`${what} Is it a Tandem server? Both ends must use the ` +
      'MessagePack parser of isomorphic/parser.js (a server on Socket.IO\'s default parser is not one).')])
  }

  #onTransportOpen = () => { this.#transportOpen = true }

  /** @param {{ doc: string, update: Uint8Array }} payload */
  #onRemoteUpdate = ({ doc, update }) => {
    if (doc !== this.docId) return
    Y.applyUpdate(this.doc, new Uint8Array(update), this)
    this.#watchMissing()
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
    // A token function gives a fresh token for the next join, so an expired one ends nothing.
    const renewable = reason === CLOSE_REASONS.EXPIRED && this.#joinToken.renewable
    if (reason === CLOSE_REASONS.RELOAD && this.#pending.size > 0) {
      // This editor's unacknowledged updates may be what made the server reload: back off.
      this.#setStatus(STATUS.CONNECTING)
      this.#retryLater(() => this.#join())
    } else if (reason === CLOSE_REASONS.RELOAD || renewable) {
      this.#join()
    } else {
      this.disconnect()
    }
  }

  /** @param {Uint8Array} update @param {unknown} origin */
  #onLocalUpdate = (update, origin) => {
    if (origin === this) return
    this.#pending.add(update)
    this.#countChanged()
    // While blocked the edit waits: it builds on the refused update, which the server lacks. A
    // viewer's edit stays local (the server would refuse it).
    if (this.#membership === JOINED && !this.#blockedBy && this.role !== ROLES.VIEWER) this.#push(update)
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

  /** @param {Refusal | null} refusal */
  #setBlocked (refusal) {
    // Each retry of a blocked update is refused again; `refused` reports those, `blocked` the change.
    const changed = (refusal === null) !== (this.#blockedBy === null)
    this.#blockedBy = refusal
    if (changed) this.emit('blocked', [refusal])
  }

  #countChanged () {
    const number = this.#pending.size
    if (number === this.#lastCount) return
    this.#lastCount = number
    this.emit('unsyncedChanges', [{ number }])
  }
}

/** Whether Yjs holds updates of `ydoc` back because what they build on has not arrived. @param {Y.Doc} ydoc */
function holdsMissing (ydoc) {
  return ydoc.store.pendingStructs !== null || ydoc.store.pendingDs !== null
}
