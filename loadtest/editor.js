import { createHash } from 'node:crypto'
import * as Y from 'yjs'
import { Awareness, applyAwarenessUpdate, encodeAwarenessUpdate } from 'y-protocols/awareness'
import { TEXT_NAME } from '../isomorphic/events.js'
import { now } from './clock.js'
import { recordMs } from './histogram.js'
import { ReceiptCursor } from './send-log.js'
import { Region } from './edits/regions.js'

const REMOTE = 'remote'
// Edits due at once are sent in bursts of at most this many before yielding, so a rate above the
// timer resolution (about 1 ms) is met without starving the receipts of the same thread.
const MAX_BURST = 64
// Edits an editor makes ahead of its schedule (`prepare`), at most: held as a few hundred bytes
// each, 150 editors' worth are tens of MB. Edits past these are made when due.
const MAX_PREPARED_EDITS = 1000

// How many of the thread's latest updates `updateMeta` keeps. A socket's reads can hold several
// broadcasts, and the thread reads its sockets one after another: in one document of 300 editors,
// remembering the last update alone, parsing took 44 % of the thread's time (a profile of the
// measured window), against 0.3 % with these.
const RECENT_UPDATES = 256
// Bytes of an update's start that its key hashes: they hold its first client's id and clock.
const KEY_BYTES = 16

/** @type {Map<number, { bytes: Buffer, meta: ReturnType<typeof Y.parseUpdateMeta> }>} the thread's latest parsed updates by key, oldest first */
const recentUpdates = new Map()

/**
 * The clock ranges of a received update. The editors of a thread receive the same broadcasts close
 * together, so the latest updates' ranges are kept and reused when an update has the same bytes as
 * one of them (compared in full: a different update is never taken for it). This spares the
 * generator one decoding per receiving editor, most of its cost per delivery in a large document.
 * @param {Uint8Array} update bytes that nothing overwrites later (each receipt has its own)
 */
function updateMeta (update) {
  const bytes = Buffer.from(update.buffer, update.byteOffset, update.byteLength)
  const key = keyOf(bytes)
  const recent = recentUpdates.get(key)
  if (recent?.bytes.equals(bytes)) return recent.meta
  const meta = Y.parseUpdateMeta(update)
  recentUpdates.delete(key)
  recentUpdates.set(key, { bytes, meta })
  if (recentUpdates.size > RECENT_UPDATES) recentUpdates.delete(/** @type {number} */ (recentUpdates.keys().next().value))
  return meta
}

/** A hash of an update's length and first bytes (FNV-1a). @param {Buffer} bytes */
function keyOf (bytes) {
  let hash = Math.imul(0x811c9dc5 ^ bytes.length, 0x01000193)
  for (let i = 0, n = Math.min(KEY_BYTES, bytes.length); i < n; i++) hash = Math.imul(hash ^ bytes[i], 0x01000193)
  return hash
}

/**
 * @typedef {object} EditorConfig
 * @property {number} index this editor's number in the level, 0-based
 * @property {import('./protocols/index.js').Protocol} protocol how it talks to the server
 * @property {string} url
 * @property {string} doc session id, or room name
 * @property {Uint8Array | null} seed the room's starting document, applied locally before joining
 *   (for servers that are not told the starting text); null when the server holds it
 * @property {number} slot this editor's region in the document
 * @property {number} slots regions in the document (editors in the room)
 * @property {number} clientBase Yjs clientID of editor 0; editor i is clientBase + i
 * @property {number} editorCount editors in the level
 * @property {string | null} token
 * @property {number} ackTimeoutMs
 * @property {number} rate edits per second
 * @property {number} awarenessRate cursor moves per second
 * @property {{ apply: (ytext: Y.Text, region: Region) => number, done: boolean }} source the edits to make
 * @property {boolean} applyRemote apply the room's updates to the Y.Doc, as a real editor does; when
 *   false they are timed and dropped (a lighter generator; the editor's own region stays consistent,
 *   since nobody else edits it)
 * @property {import('./send-log.js').SendLog} sendLog
 * @property {import('./editor-stats.js').EditorStats} stats shared by the editors of a thread
 */

/** @typedef {{ update: Uint8Array, firstClock: number, cursor: number }} PreparedEdit an edit's update, the first clock it takes, the cursor after it */

/**
 * One simulated editor: a real connection speaking one system's protocol (protocols/), a Y.Doc whose
 * `content` text it edits in its own region, and a y-protocols Awareness carrying its cursor where
 * the protocol carries presence. Updates are sent open-loop on a fixed schedule, each awaiting its
 * ACK with a timeout where the protocol has ACKs, the way an editor keeps typing while earlier
 * keystrokes are still unacknowledged.
 */
export class LoadEditor {
  ydoc = new Y.Doc()
  joined = false
  sentInWindow = 0
  pending = 0
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
  /** @type {(PreparedEdit | null)[]} edits made ahead, in order; null once sent */
  #prepared = []
  #nextPrepared = 0
  /** Edits sent, the warm-up's included. */
  editsSent = 0
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
    const { stats } = config
    this.connection = config.protocol.connect({
      url: config.url,
      room: config.doc,
      token: config.token,
      timeoutMs: config.ackTimeoutMs,
      on: {
        update: update => this.#receiveUpdate(update),
        awareness: update => {
          if (now() >= this.#measureFrom) stats.awarenessReceived++
          if (this.config.applyRemote) applyAwarenessUpdate(this.awareness, update, REMOTE)
        },
        lost: reason => {
          if (reason === 'closed') {
            stats.closedByServer++
          } else {
            if (this.#stopped) return
            stats.disconnects++
          }
          this.#halt()
        }
      }
    })
    this.awareness.on('update', (/** @type {any} */ _changes, /** @type {unknown} */ origin) => {
      if (origin === 'local' && this.joined && !this.#stopped) this.#sendAwareness()
    })
  }

  /** Connects, joins and syncs the document. Throws on failure. */
  async join () {
    const { seed, stats } = this.config
    if (seed) Y.applyUpdate(this.ydoc, seed, REMOTE)
    const started = now()
    try {
      await this.connection.open()
    } catch (err) {
      stats.connectFailed++
      throw err
    }
    const connected = now()
    recordMs(stats.connect, connected - started)
    try {
      const { appliedAt } = await this.connection.join(this.ydoc)
      recordMs(stats.join, appliedAt - connected)
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
   * Makes up to `count` of its edits ahead of the schedule, if this editor does not apply what it
   * receives: its document then changes by its own edits alone, so each edit's update is the same
   * whenever it is made. On the schedule, the generator's thread only sends them; making them there
   * (Yjs) took about 30 % of its time at 600 editors, time that delayed the receipts it times
   * (docs/PERFORMANCE.md). An editor that applies the room's edits makes each when it is due, on
   * the document as it then is.
   * @param {number} count
   */
  prepare (count) {
    if (this.config.applyRemote || !this.joined) return
    for (let i = 0; i < Math.min(count, MAX_PREPARED_EDITS) && !this.config.source.done; i++) this.#prepared.push(this.#makeEdit())
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
    if (this.config.awarenessRate > 0 && this.connection.sendAwareness) {
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
    return this.#stopped || this.outOfEdits
  }

  /** Whether its source has no edit left, made ahead or to make. */
  get outOfEdits () {
    return this.config.source.done && this.#nextPrepared === this.#prepared.length
  }

  /** A digest of the editor's text, for the convergence check. */
  digest () {
    return createHash('sha1').update(this.text.toString()).digest('hex')
  }

  close () {
    this.#halt()
    this.connection.close()
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
    const { index, sendLog, stats } = this.config
    const prepared = this.#nextPrepared < this.#prepared.length
    const { update, firstClock, cursor } = prepared ? /** @type {PreparedEdit} */ (this.#prepared[this.#nextPrepared]) : this.#makeEdit()
    if (prepared) this.#prepared[this.#nextPrepared++] = null
    this.#cursor = cursor
    this.editsSent++
    const sentAt = now()
    const measured = sentAt >= this.#measureFrom
    sendLog.record(index, firstClock, sentAt)
    if (measured) {
      stats.sent++
      this.sentInWindow++
      recordMs(stats.scheduleLag, sentAt - due)
    }
    const ack = this.connection.send(update)
    if (!ack) return
    this.pending++
    ack.then(
      (reply) => {
        if (!measured) return
        if (reply.ok) {
          stats.acked++
          stats.recordAck(now() - sentAt)
        } else {
          stats.recordRefusal(reply.code)
        }
      },
      () => { if (measured) stats.timedOut++ }
    ).finally(() => {
      if (--this.pending === 0) for (const wake of this.#settleWaiters.splice(0)) wake()
    })
  }

  /**
   * Makes the next edit in this editor's region, in a transaction of its own.
   * @returns {PreparedEdit}
   */
  #makeEdit () {
    const { source } = this.config
    const region = /** @type {Region} */ (this.region)
    const clientID = this.ydoc.clientID
    const firstClock = Y.getState(this.ydoc.store, clientID)
    let cursor = 0
    this.ydoc.on('update', this.#captureUpdate)
    this.ydoc.transact(() => {
      cursor = source.apply(this.text, region)
      // A delete-only edit creates no item, and so no clock a receiver could match it by: give it a
      // one-character insert that it deletes again (a tombstone, invisible in the text).
      if (Y.getState(this.ydoc.store, clientID) === firstClock) {
        this.text.insert(cursor, ' ')
        this.text.delete(cursor, 1)
      }
    })
    this.ydoc.off('update', this.#captureUpdate)
    const update = /** @type {Uint8Array} */ (this.#update)
    this.#update = null
    return { update, firstClock, cursor }
  }

  /** @param {Uint8Array} update */
  #receiveUpdate (update) {
    const received = now()
    const { clientBase, editorCount, index, stats } = this.config
    const { from, to } = updateMeta(update)
    for (const [client, first] of from) {
      const sender = client - clientBase
      // This editor's own edits come back inside a room's merged broadcast, or from a server that
      // echoes every update to its sender: they are no broadcast to it.
      if (sender < 0 || sender >= editorCount || sender === index) continue
      this.receipts.match(sender, first, /** @type {number} */ (to.get(client)), sentAt => {
        if (sentAt >= this.#measureFrom) stats.recordBroadcast(received - sentAt)
      })
    }
    // An echo of this editor's own edit changes nothing: skip the work of applying it. Updates that
    // arrive while joining (another editor's seed) are applied whatever applyRemote says.
    const echo = from.size === 1 && from.has(this.ydoc.clientID)
    if (!echo && (this.config.applyRemote || !this.joined)) Y.applyUpdate(this.ydoc, update, REMOTE)
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
    this.connection.sendAwareness?.(update)
  }
}
