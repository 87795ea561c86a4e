// How a receiver learns when an update it received was sent, across worker threads.
//
// Every editor has a Yjs clientID derived from its index (`clientBase + index`), and every update it
// sends creates at least one item (see editor.js), so an update is identified by its sender's clock
// range [from, to). Before emitting, the sender appends (first clock, send time) to its ring in shared
// memory. A receiver reads the clock ranges of whatever it receives (`Y.parseUpdateMeta`) and walks
// the sender's ring from where it stopped last time: each entry whose first clock falls in a received
// range is one delivered send. The server merges a busy room's updates into one broadcast
// (server/realtime/room-relay.js), and a merged update still covers each part's clock range, so every
// send in it is found. A receiver never counts a send twice: its position per sender only moves forward.

/**
 * @typedef {object} SendLogBuffers
 * @property {SharedArrayBuffer} heads Int32 per editor: sends logged so far
 * @property {SharedArrayBuffer} clocks Float64 per editor × capacity: first clock of each send
 * @property {SharedArrayBuffer} times Float64 per editor × capacity: send time (clock.js)
 * @property {number} capacity ring size per editor, a power of two
 */

export class SendLog {
  /**
   * @param {number} editors
   * @param {number} minCapacity sends a receipt may lag behind its sender before it is no longer matched
   */
  static create (editors, minCapacity) {
    const capacity = 2 ** Math.ceil(Math.log2(Math.max(64, minCapacity)))
    return new SendLog({
      heads: new SharedArrayBuffer(4 * editors),
      clocks: new SharedArrayBuffer(8 * editors * capacity),
      times: new SharedArrayBuffer(8 * editors * capacity),
      capacity
    })
  }

  /** @param {SendLogBuffers} buffers */
  constructor (buffers) {
    this.buffers = buffers
    this.capacity = buffers.capacity
    this.mask = buffers.capacity - 1
    this.heads = new Int32Array(buffers.heads)
    this.clocks = new Float64Array(buffers.clocks)
    this.times = new Float64Array(buffers.times)
  }

  /**
   * Logs a send; call before emitting, so no receipt can precede its entry.
   * @param {number} editor
   * @param {number} clock first Yjs clock of the update
   * @param {number} time
   */
  record (editor, clock, time) {
    const seq = this.heads[editor]
    const slot = editor * this.capacity + (seq & this.mask)
    this.clocks[slot] = clock
    this.times[slot] = time
    // The atomic store publishes the entry: a reader that sees the new head also sees the slot.
    Atomics.store(this.heads, editor, seq + 1)
  }
}

/** One receiver's read positions in the senders' rings. */
export class ReceiptCursor {
  /** @type {Map<number, number>} sender → next sequence number to match */
  #next = new Map()

  /** @param {SendLog} log */
  constructor (log) {
    this.log = log
    /** Sends that fell out of a ring before this receiver matched them. */
    this.overrun = 0
  }

  /**
   * Calls `onSend(sendTime)` for every send of `sender` whose first clock is in [from, to).
   * @param {number} sender
   * @param {number} from
   * @param {number} to
   * @param {(sendTime: number) => void} onSend
   */
  match (sender, from, to, onSend) {
    const { heads, clocks, times, capacity, mask } = this.log
    const head = Atomics.load(heads, sender)
    let seq = this.#next.get(sender) ?? 0
    if (head - seq > capacity) {
      this.overrun += head - capacity - seq
      seq = head - capacity
    }
    const base = sender * capacity
    for (; seq < head; seq++) {
      const clock = clocks[base + (seq & mask)]
      if (clock >= to) break
      // A first clock below `from` is a send whose start this receiver never got: skip it.
      if (clock >= from) onSend(times[base + (seq & mask)])
    }
    this.#next.set(sender, seq)
  }
}
