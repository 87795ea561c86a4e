import * as Y from 'yjs'
import { EVENTS } from '../../isomorphic/events.js'
import { EVENT, PacketTemplate } from '../../isomorphic/parser.js'
import { webSocketFrameOf } from './write-frame.js'

/**
 * Rooms of fewer editors than this get every update at once, however busy. Gathering saves writes
 * only where a room's updates meet in one turn: at 600 editors in rooms of 5, 2-3 % of updates
 * waited for the turn's end, few of them merged with another, and the waits were the latency
 * tail, while every send paid for scheduling a flush. Rooms of 10 at the same load had shorter
 * tails gathering (docs/PERFORMANCE.md, "Small rooms send every update at once").
 */
const GATHER_FROM_EDITORS = 8

/** The Socket.IO room of a document's editors. @param {string} docId */
export const roomOf = docId => `doc:${docId}`

/** @typedef {{ awarenessIntervalMs: number, fanOutSpacing: number, metrics: import('../metrics.js').Metrics, writeFrame: import('./write-frame.js').WriteFrame }} RelayOptions */

/** @type {WeakMap<import('../documents/live-doc.js').LiveDoc, RoomRelay>} */
const relays = new WeakMap()

/**
 * The relay of a document, made on first use.
 * @param {import('../documents/live-doc.js').LiveDoc} doc
 * @param {import('socket.io').Namespace} nsp
 * @param {RelayOptions} options
 */
export function relayOf (doc, nsp, options) {
  let relay = relays.get(doc)
  if (!relay) {
    relay = new RoomRelay(doc, nsp, options)
    relays.set(doc, relay)
  }
  return relay
}

/**
 * Tells a document's relay that these awareness clients are gone (their removal was sent).
 * @param {import('../documents/live-doc.js').LiveDoc} doc
 * @param {Iterable<number>} clientIds
 */
export function forgetAwareness (doc, clientIds) {
  relays.get(doc)?.forget(clientIds)
}

/**
 * Sends a document's updates and awareness to its room, so that a busy room costs one message per
 * turn rather than one per update per editor.
 *
 * Updates: a quiet room, or one of fewer than GATHER_FROM_EDITORS editors, gets an update at once,
 * without its sender, or the updates its document applied together as one merged update to
 * everyone. In a larger room, until a flush finds nothing new, further updates are gathered and
 * sent together as one merged update (Y.mergeUpdates), encoded once for the whole room: at the end
 * of the event loop's turn, or, for a room whose sends take a millisecond or more, after as long as
 * the last send took. A merged update may hold the recipient's own edits; Yjs skips what it already
 * has (y-websocket servers echo every update).
 *
 * Awareness: the latest state of each client that changed is sent at most once per
 * `awarenessIntervalMs` per room, all of them in one message; a quiet room's first change goes out
 * at once. Removals of departed clients do not wait (editors.js sends them).
 */
export class RoomRelay {
  /** @type {Uint8Array[] | null} updates gathered this turn; null while the room is quiet */
  #updates = null
  /** @type {Set<number>} awareness clients changed since the last flush */
  #changed = new Set()
  #awarenessTimer = /** @type {NodeJS.Timeout | undefined} */ (undefined)
  #awarenessSentAt = -Infinity

  /**
   * @param {import('../documents/live-doc.js').LiveDoc} doc
   * @param {import('socket.io').Namespace} nsp
   * @param {RelayOptions} options
   */
  constructor (doc, nsp, { awarenessIntervalMs, fanOutSpacing, metrics, writeFrame }) {
    this.doc = doc
    this.nsp = nsp
    this.awarenessIntervalMs = awarenessIntervalMs
    this.fanOutSpacing = fanOutSpacing
    this.metrics = metrics
    this.writeFrame = writeFrame
    this.updatePacket = new PacketTemplate({ type: EVENT, nsp: nsp.name, data: [EVENTS.UPDATE, { doc: doc.id, update: null }] })
  }

  /**
   * Sends an update to the document's editors in this process (other processes hear of it from the
   * store's feed, once it is stored).
   * @param {Uint8Array} update applied to the document
   * @param {import('socket.io').Socket} [sender] the editor it came from, if any: it has it already
   */
  update (update, sender) {
    this.updates([{ update, sender }])
  }

  /**
   * Sends updates applied together (a turn's, LiveDoc.take). A quiet or small room gets them at
   * once: one alone without its sender, several as one merged update to every editor.
   * @param {{ update: Uint8Array, sender?: import('socket.io').Socket }[]} applied
   */
  updates (applied) {
    if (this.#updates) {
      for (const { update } of applied) this.#updates.push(update)
      return
    }
    if (this.doc.sockets.size < GATHER_FROM_EDITORS) {
      this.#sendApplied(applied)
      return
    }
    const started = performance.now()
    this.#sendApplied(applied)
    this.#updates = []
    this.#scheduleFlush(performance.now() - started)
  }

  /**
   * One update alone without its sender, several as one merged update to every editor.
   * @param {{ update: Uint8Array, sender?: import('socket.io').Socket }[]} applied
   */
  #sendApplied (applied) {
    if (applied.length === 1) this.#sendUpdate(applied[0].update, applied[0].sender)
    else this.#sendMerged(applied.map(({ update }) => update))
  }

  /**
   * The next flush waits `fanOutSpacing` times as long as the last send took (at least until the next
   * turn): a send to a large room is costly, and the updates gathered meanwhile share the next one,
   * so a busy room's fan-out keeps to a bounded share of the event loop whatever its size. A small
   * room, whose sends take microseconds, is flushed every turn.
   * @param {number} sendMs
   */
  #scheduleFlush (sendMs) {
    const waitMs = sendMs * this.fanOutSpacing
    if (waitMs < 1) setImmediate(this.#flushUpdates)
    else setTimeout(this.#flushUpdates, waitMs)
  }

  #flushUpdates = () => {
    const updates = /** @type {Uint8Array[]} */ (this.#updates)
    if (updates.length === 0) {
      this.#updates = null
      return
    }
    this.#updates = []
    const started = performance.now()
    this.#sendMerged(updates)
    this.#scheduleFlush(performance.now() - started)
  }

  /** @param {Uint8Array[]} updates sent as one, to every editor */
  #sendMerged (updates) {
    this.#sendUpdate(updates.length === 1 ? updates[0] : Y.mergeUpdates(updates))
    this.metrics.mergedUpdates.observe(updates.length)
  }

  /**
   * Writes an update to each editor of the document in this process, encoded and framed once (the
   * room's template encodes only the update's bytes after the rest of the packet's). The document's
   * own set of sockets is the room here: the room's broadcast (a broadcast operator per send, the
   * adapter's walk of the room) cost 6 % more CPU per delivery in rooms of 5 (docs/PERFORMANCE.md).
   * @param {Uint8Array} update
   * @param {import('socket.io').Socket} [sender] left out
   */
  #sendUpdate (update, sender) {
    const frame = webSocketFrameOf(this.updatePacket.encode(update))
    const { writeFrame } = this
    let sent = 0
    for (const socket of this.doc.sockets) {
      if (socket === sender || !socket.connected) continue
      writeFrame(socket, frame)
      sent++
    }
    this.metrics.deliveries[EVENTS.UPDATE].inc(sent)
  }

  /** @param {{ clientId: number }[]} entries of an awareness update applied to `doc.awareness` */
  awareness (entries) {
    for (const { clientId } of entries) this.#changed.add(clientId)
    if (this.#awarenessTimer) return
    const wait = this.#awarenessSentAt + this.awarenessIntervalMs - performance.now()
    if (wait <= 0) this.#flushAwareness()
    else this.#awarenessTimer = setTimeout(this.#flushAwareness, wait)
  }

  /** Departed clients: their removal has been sent, nothing of them is still to go. @param {Iterable<number>} clientIds */
  forget (clientIds) {
    for (const clientId of clientIds) this.#changed.delete(clientId)
  }

  #flushAwareness = () => {
    this.#awarenessTimer = undefined
    if (this.#changed.size === 0) return
    const update = this.doc.awareness.encode(this.#changed)
    this.#changed.clear()
    this.#awarenessSentAt = performance.now()
    this.nsp.to(roomOf(this.doc.id)).emit(EVENTS.AWARENESS, { doc: this.doc.id, update })
    this.metrics.deliveries[EVENTS.AWARENESS].inc(this.doc.sockets.size)
  }
}
