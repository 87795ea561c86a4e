import { createHash } from 'node:crypto'
import { io } from 'socket.io-client'
import * as Y from 'yjs'
import { Awareness, applyAwarenessUpdate, encodeAwarenessUpdate } from 'y-protocols/awareness'
import { EVENTS, TEXT_NAME } from '../server/protocol.js'
import { now } from './clock.js'
import { recordMs } from './histogram.js'
import { ReceiptCursor } from './send-log.js'
import { Region } from './edits/regions.js'

const REMOTE = 'remote'
// Edits due at once are sent in bursts of at most this many before yielding, so a rate above the
// timer resolution (about 1 ms) is met without starving the receipts of the same thread.
const MAX_BURST = 64

/**
 * @typedef {object} EditorConfig
 * @property {number} index this editor's number in the level, 0-based
 * @property {string} url
 * @property {string} doc session id
 * @property {number} slot this editor's region in the document
 * @property {number} slots regions in the document (editors in the room)
 * @property {number} clientBase Yjs clientID of editor 0; editor i is clientBase + i
 * @property {number} editorCount editors in the level
 * @property {string | null} token
 * @property {number} ackTimeoutMs
 * @property {number} rate edits per second
 * @property {number} awarenessRate cursor moves per second
 * @property {{ apply: (ytext: Y.Text, region: Region) => number, done: boolean }} source the edits to make
 * @property {import('./send-log.js').SendLog} sendLog
 * @property {import('./editor-stats.js').EditorStats} stats shared by the editors of a thread
 */

/**
 * One simulated editor: a real socket.io-client connection speaking docs/PROTOCOL.md, a Y.Doc whose
 * `content` text it edits in its own region, and a y-protocols Awareness carrying its cursor.
 * Updates are sent open-loop on a fixed schedule, each awaiting its ACK with a timeout, the way an
 * editor keeps typing while earlier keystrokes are still unacknowledged.
 */
export class LoadEditor {
  ydoc = new Y.Doc()
  joined = false
  sentInWindow = 0
  pending = 0
  /** @type {import('socket.io-client').Socket | null} */
  socket = null
  /** @type {Region | null} */
  region = null
  #cursor = 0
  #measureFrom = Infinity
  #stopAt = Infinity
  #stopped = false
  /** @type {NodeJS.Timeout[]} */
  #timers = []
  /** @type {Uint8Array | null} */
  #update = null
  // A permanent 'update' listener would make Yjs encode every remote transaction too, only for the
  // editor to ignore it; attached around local edits only, it spares the generator that work.
  #captureUpdate = (/** @type {Uint8Array} */ update) => { this.#update = update }
  /** @type {(() => void)[]} */
  #settleWaiters = []

  /** @param {EditorConfig} config */
  constructor (config) {
    this.config = config
    this.ydoc.clientID = config.clientBase + config.index
    this.text = this.ydoc.getText(TEXT_NAME)
    this.awareness = new Awareness(this.ydoc)
    this.receipts = new ReceiptCursor(config.sendLog)
    this.awareness.on('update', (/** @type {any} */ _changes, /** @type {unknown} */ origin) => {
      if (origin === 'local' && this.joined && !this.#stopped) this.#sendAwareness()
    })
  }

  /** Connects, joins and syncs the document (docs/PROTOCOL.md, sync sequence). Throws on failure. */
  async join () {
    const { url, token, doc, ackTimeoutMs, stats } = this.config
    const started = now()
    const socket = io(url, {
      transports: ['websocket'],
      reconnection: false,
      forceNew: true,
      timeout: ackTimeoutMs,
      ...(token ? { auth: { token } } : {})
    })
    this.socket = socket
    socket.on(EVENTS.UPDATE, ({ update }) => this.#receiveUpdate(new Uint8Array(update)))
    socket.on(EVENTS.AWARENESS, ({ update }) => {
      if (now() >= this.#measureFrom) stats.awarenessReceived++
      applyAwarenessUpdate(this.awareness, new Uint8Array(update), REMOTE)
    })
    socket.on(EVENTS.CLOSED, () => {
      stats.closedByServer++
      this.#halt()
    })
    try {
      await new Promise((resolve, reject) => {
        socket.once('connect', () => resolve(undefined))
        socket.once('connect_error', reject)
      })
    } catch (err) {
      stats.connectFailed++
      throw err
    }
    const connected = now()
    recordMs(stats.connect, connected - started)
    socket.on('disconnect', () => {
      if (this.#stopped) return
      stats.disconnects++
      this.#halt()
    })
    try {
      const reply = await this.#request(EVENTS.JOIN, { doc, sv: Y.encodeStateVector(this.ydoc) })
      if (!reply.ok) throw new Error(`join refused: ${reply.error.code}`)
      Y.applyUpdate(this.ydoc, new Uint8Array(reply.update), REMOTE)
      applyAwarenessUpdate(this.awareness, new Uint8Array(reply.awareness), REMOTE)
      const joinedAt = now()
      const diff = await this.#request(EVENTS.UPDATE, { doc, update: Y.encodeStateAsUpdate(this.ydoc, new Uint8Array(reply.sv)) })
      if (!diff.ok) throw new Error(`sync refused: ${diff.error.code}`)
      recordMs(stats.join, joinedAt - connected)
      recordMs(stats.synced, now() - started)
    } catch (err) {
      stats.joinFailed++
      throw err
    }
    this.region = new Region(this.text, this.config.slot, this.config.slots)
    this.joined = true
    this.awareness.setLocalState({ user: { name: `editor ${this.config.index + 1}` }, cursor: null })
  }

  /**
   * Starts editing and moving the cursor: edits from a random instant within the first interval
   * after `startAt` until `stopAt`; only what is sent from `measureFrom` on is measured.
   * @param {{ startAt: number, measureFrom: number, stopAt: number }} schedule
   */
  start ({ startAt, measureFrom, stopAt }) {
    if (!this.joined) return
    this.#measureFrom = measureFrom
    this.#stopAt = stopAt
    const editInterval = 1000 / this.config.rate
    this.#every(editInterval, startAt + Math.random() * editInterval, due => this.#edit(due))
    if (this.config.awarenessRate > 0) {
      const moveInterval = 1000 / this.config.awarenessRate
      this.#every(moveInterval, startAt + Math.random() * moveInterval, () => this.#moveCursor())
    }
  }

  /** Stops editing; resolves once every update sent has been acknowledged, refused or timed out. */
  stop () {
    this.#halt()
    if (this.pending === 0) return Promise.resolve()
    return new Promise(resolve => this.#settleWaiters.push(() => resolve(undefined)))
  }

  get finished () {
    return this.config.source.done || this.#stopped
  }

  /** A digest of the editor's text, for the convergence check. */
  digest () {
    return createHash('sha1').update(this.text.toString()).digest('hex')
  }

  close () {
    this.#halt()
    this.socket?.disconnect()
    this.awareness.destroy()
    this.ydoc.destroy()
  }

  #halt () {
    this.#stopped = true
    for (const timer of this.#timers) clearTimeout(timer)
  }

  /**
   * Runs `action(due)` at `first`, `first + interval`, … until stopAt, catching up in bursts when late.
   * @param {number} interval
   * @param {number} first
   * @param {(due: number) => void} action
   */
  #every (interval, first, action) {
    let due = first
    const slot = this.#timers.length
    const tick = () => {
      const t = now()
      for (let burst = 0; burst < MAX_BURST && due <= t && due < this.#stopAt && !this.finished; burst++) {
        action(due)
        due += interval
      }
      if (due >= this.#stopAt || this.finished) return
      this.#timers[slot] = setTimeout(tick, Math.max(0, due - now()))
    }
    this.#timers[slot] = setTimeout(tick, Math.max(0, due - now()))
  }

  /** @param {number} due when the schedule wanted this edit */
  #edit (due) {
    const { index, doc, sendLog, stats, source, ackTimeoutMs } = this.config
    const region = /** @type {Region} */ (this.region)
    const clientID = this.ydoc.clientID
    const firstClock = Y.getState(this.ydoc.store, clientID)
    this.ydoc.on('update', this.#captureUpdate)
    this.ydoc.transact(() => {
      this.#cursor = source.apply(this.text, region)
      // A delete-only edit creates no item, and so no clock a receiver could match it by: give it a
      // one-character insert that it deletes again (a tombstone, invisible in the text).
      if (Y.getState(this.ydoc.store, clientID) === firstClock) {
        this.text.insert(this.#cursor, ' ')
        this.text.delete(this.#cursor, 1)
      }
    })
    this.ydoc.off('update', this.#captureUpdate)
    const update = /** @type {Uint8Array} */ (this.#update)
    this.#update = null
    const sentAt = now()
    const measured = sentAt >= this.#measureFrom
    sendLog.record(index, firstClock, sentAt)
    if (measured) {
      stats.sent++
      this.sentInWindow++
      recordMs(stats.scheduleLag, sentAt - due)
    }
    this.pending++
    const socket = /** @type {import('socket.io-client').Socket} */ (this.socket)
    socket.timeout(ackTimeoutMs).emitWithAck(EVENTS.UPDATE, { doc, update }).then(
      (reply) => {
        if (!measured) return
        if (reply.ok) {
          stats.acked++
          stats.recordAck(now() - sentAt)
        } else {
          stats.recordRefusal(reply.error.code)
        }
      },
      () => { if (measured) stats.timedOut++ }
    ).finally(() => {
      if (--this.pending === 0) for (const wake of this.#settleWaiters.splice(0)) wake()
    })
  }

  /** @param {Uint8Array} update */
  #receiveUpdate (update) {
    const received = now()
    const { clientBase, editorCount, stats } = this.config
    const { from, to } = Y.parseUpdateMeta(update)
    for (const [client, first] of from) {
      const sender = client - clientBase
      if (sender < 0 || sender >= editorCount) continue
      this.receipts.match(sender, first, /** @type {number} */ (to.get(client)), sentAt => {
        if (sentAt >= this.#measureFrom) stats.recordBroadcast(received - sentAt)
      })
    }
    Y.applyUpdate(this.ydoc, update, REMOTE)
  }

  #moveCursor () {
    const region = /** @type {Region} */ (this.region)
    const start = region.start()
    const end = region.end()
    // Around the last edit, as a caret and a short selection move while typing.
    const head = Math.min(end, Math.max(start, this.#cursor + Math.round((Math.random() - 0.5) * 16)))
    const anchor = Math.min(end, Math.max(start, head - Math.floor(Math.random() * 4)))
    const position = (/** @type {number} */ index) => Y.relativePositionToJSON(Y.createRelativePositionFromTypeIndex(this.text, index))
    this.awareness.setLocalStateField('cursor', { anchor: position(anchor), head: position(head) })
  }

  #sendAwareness () {
    const update = encodeAwarenessUpdate(this.awareness, [this.ydoc.clientID])
    if (now() >= this.#measureFrom) this.config.stats.awarenessSent++
    this.socket?.emit(EVENTS.AWARENESS, { doc: this.config.doc, update })
  }

  /**
   * @param {string} event
   * @param {unknown} payload
   */
  #request (event, payload) {
    const socket = /** @type {import('socket.io-client').Socket} */ (this.socket)
    return socket.timeout(this.config.ackTimeoutMs).emitWithAck(event, payload)
  }
}
