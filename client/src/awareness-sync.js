import { applyAwarenessUpdate, encodeAwarenessUpdate, removeAwarenessStates } from 'y-protocols/awareness'

/**
 * One document's awareness (cursors, selections, user name and colour) over a Tandem connection:
 * sends this client's own state whenever it changes while joined and again after every join,
 * applies the states the server relays, and forgets the others when the membership ends.
 */
export class AwarenessSync {
  #live = false

  /**
   * @param {import('y-protocols/awareness').Awareness} awareness
   * @param {{ origin: unknown, send: (update: Uint8Array) => void }} channel `origin` marks
   *   updates applied from the server; `send` emits an awareness update for the document
   */
  constructor (awareness, { origin, send }) {
    this.awareness = awareness
    this.origin = origin
    this.send = send
    awareness.on('update', this.#onUpdate)
  }

  /** The document is joined: take the states of the reply, then announce this client. @param {Uint8Array} states */
  joined (states) {
    applyAwarenessUpdate(this.awareness, states, this.origin)
    this.#live = true
    const state = this.awareness.getLocalState()
    if (state === null) return
    // When this client last left, the server marked it removed at its last clock + 1, and a
    // removal wins a tie: announce at a clock above that, so the others take it back.
    const meta = this.awareness.meta.get(this.awareness.clientID)
    if (meta) meta.clock++
    this.awareness.setLocalState(state) // one more tick, and an `update` that #onUpdate sends
  }

  /** The membership ended: drop the others' cursors until the next join brings them back. */
  left () {
    this.#live = false
    const others = [...this.awareness.getStates().keys()].filter(id => id !== this.awareness.clientID)
    removeAwarenessStates(this.awareness, others, this.origin)
    // Removal leaves each clock one tick ahead, which would make the states the next join brings
    // (at their unchanged clocks) look stale. Forget the clocks along with the states.
    for (const id of others) this.awareness.meta.delete(id)
  }

  /** @param {Uint8Array} update relayed by the server */
  receive (update) {
    applyAwarenessUpdate(this.awareness, update, this.origin)
  }

  /** Tells the others this client is gone, ahead of the disconnect (a closing page). */
  removeSelf () {
    removeAwarenessStates(this.awareness, [this.awareness.clientID], 'window unload')
  }

  destroy () {
    this.awareness.off('update', this.#onUpdate)
  }

  /**
   * Sends only this client's own state: the server attributes every state a socket sends to that
   * socket and removes them all when it leaves, so relaying other clients' states would get them
   * removed along with this one.
   * @param {{ added: number[], updated: number[], removed: number[] }} changes
   * @param {unknown} origin
   */
  #onUpdate = ({ added, updated, removed }, origin) => {
    const self = this.awareness.clientID
    if (origin === this.origin || !this.#live || ![...added, ...updated, ...removed].includes(self)) return
    this.send(encodeAwarenessUpdate(this.awareness, [self]))
  }
}
