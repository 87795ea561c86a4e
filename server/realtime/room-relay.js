import * as Y from 'yjs'
import { EVENTS } from '../../isomorphic/events.js'
import { EVENT, PacketTemplate } from '../../isomorphic/parser.js'
import { webSocketFrameOf } from './write-frame.js'
/** @import { Namespace, Socket } from 'socket.io' */
/** @import { LiveDoc } from '../documents/live-doc.js' */

// Rooms of fewer editors get every update at once, however busy: gathering pays only where a room's
// updates meet in one turn (docs/PERFORMANCE.md, "Small rooms send every update at once").
const GATHER_FROM_EDITORS = 8

/** The Socket.IO room of a document's editors. @param {string} docId */
export const roomOf = docId => `doc:${docId}`

/** @typedef {{ awarenessIntervalMs: number, fanOutSpacing: number, metrics: import('../metrics.js').Metrics, writeFrame: import('./write-frame.js').WriteFrame }} RelayOptions */

/** @type {WeakMap<LiveDoc, RoomRelay>} */
const relays = new WeakMap()

/** Made on first use. @param {LiveDoc} doc @param {Namespace} nsp @param {RelayOptions} options */
export function relayOf (doc, nsp, options) {
  let relay = relays.get(doc)
  if (!relay) {
    relay = new RoomRelay(doc, nsp, options)
    relays.set(doc, relay)
  }
  return relay
}

/** @param {LiveDoc} doc @param {Iterable<number>} clientIds gone, their removal sent */
export function forgetAwareness (doc, clientIds) {
  relays.get(doc)?.forget(clientIds)
}

/**
 * Sends a document's updates and awareness to its editors in this process: a busy room costs one
 * message per turn, not one per update per editor. A quiet or small room gets each update at once,
 * without its sender; a larger one gathers them until a send finds nothing new and sends them
 * merged, encoded once, at the end of the turn or after `fanOutSpacing` times the last send's
 * duration (Yjs skips a recipient's own edits). Awareness: each changed client's latest state, at
 * most once per `awarenessIntervalMs`; removals go at once (editors.js).
 */
export class RoomRelay {
  /** @type {Uint8Array[] | null} updates gathered this turn; null while the room is quiet */
  #updates = null
  /** @type {Set<number>} awareness clients changed since the last send */
  #changed = new Set()
  #awarenessTimer = /** @type {NodeJS.Timeout | undefined} */ (undefined)
  #awarenessSentAt = -Infinity

  /** @param {LiveDoc} doc @param {Namespace} nsp @param {RelayOptions} options */
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
   * Other processes hear of it from the feed once it is stored.
   * @param {Uint8Array} update applied to the document
   * @param {Socket} [sender] the editor it came from: it has it already
   */
  update (update, sender) {
    this.updates([{ update, sender }])
  }

  /** @param {{ update: Uint8Array, sender?: Socket }[]} applied together, in a turn (LiveDoc.take) */
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
    this.#scheduleSend(performance.now() - started)
  }

  /**
   * One alone without its sender, several as one merged update to every editor.
   * @param {{ update: Uint8Array, sender?: Socket }[]} applied
   */
  #sendApplied (applied) {
    if (applied.length === 1) this.#sendUpdate(applied[0].update, applied[0].sender)
    else this.#sendMerged(applied.map(({ update }) => update))
  }

  /**
   * A send to a large room is costly, so the next waits `fanOutSpacing` times as long (at least a
   * turn), keeping a busy room's fan-out to a bounded share of the event loop. @param {number} sendMs
   */
  #scheduleSend (sendMs) {
    const waitMs = sendMs * this.fanOutSpacing
    if (waitMs < 1) setImmediate(this.#sendGathered)
    else setTimeout(this.#sendGathered, waitMs)
  }

  #sendGathered = () => {
    const updates = /** @type {Uint8Array[]} */ (this.#updates)
    if (updates.length === 0) {
      this.#updates = null
      return
    }
    this.#updates = []
    const started = performance.now()
    this.#sendMerged(updates)
    this.#scheduleSend(performance.now() - started)
  }

  /** @param {Uint8Array[]} updates sent as one, to every editor */
  #sendMerged (updates) {
    this.#sendUpdate(updates.length === 1 ? updates[0] : Y.mergeUpdates(updates))
    this.metrics.mergedUpdates.observe(updates.length)
  }

  /**
   * Framed once for every editor here, from the document's own set of sockets rather than a room
   * broadcast (docs/PERFORMANCE.md, "Updates written straight to the room's editors").
   * @param {Uint8Array} update @param {Socket} [sender] left out
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
    if (wait <= 0) this.#sendAwareness()
    else this.#awarenessTimer = setTimeout(this.#sendAwareness, wait)
  }

  /** @param {Iterable<number>} clientIds departed, their removal sent */
  forget (clientIds) {
    for (const clientId of clientIds) this.#changed.delete(clientId)
  }

  #sendAwareness = () => {
    this.#awarenessTimer = undefined
    if (this.#changed.size === 0) return
    const update = this.doc.awareness.encode(this.#changed)
    this.#changed.clear()
    this.#awarenessSentAt = performance.now()
    this.nsp.to(roomOf(this.doc.id)).emit(EVENTS.AWARENESS, { doc: this.doc.id, update })
    this.metrics.deliveries[EVENTS.AWARENESS].inc(this.doc.sockets.size)
  }
}
