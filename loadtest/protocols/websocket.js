import { WebSocket } from 'ws'

// The WebSocket client of the protocols spoken over a bare WebSocket (tandem-wire.js, and the peers'
// clients in bench/peers/clients/): `ws`, the library socket.io-client itself uses in Node, without
// compression (no server here negotiates it either).

/**
 * Opens a WebSocket; rejects if it is not open within `timeoutMs`. The listeners are attached
 * before the socket opens: a server that speaks first (y-websocket sends its sync step 1 at once)
 * can have its first message arrive with the handshake's response, and ws emits that message
 * before an `await` on the opening could attach a listener.
 * @param {string} url
 * @param {number} timeoutMs
 * @param {{ message: (data: Buffer, isBinary: boolean) => void, close: () => void }} on
 * @returns {Promise<WebSocket>}
 */
export function openWebSocket (url, timeoutMs, on) {
  const ws = new WebSocket(url, { perMessageDeflate: false, handshakeTimeout: timeoutMs })
  ws.on('message', (data, isBinary) => on.message(/** @type {Buffer} */ (data), isBinary))
  return new Promise((resolve, reject) => {
    ws.once('open', () => {
      ws.off('error', reject)
      // An error after opening is followed by 'close'.
      ws.on('error', () => {})
      ws.once('close', on.close)
      resolve(ws)
    })
    ws.once('error', reject)
  })
}

/**
 * ACKs that a server sends in the order of the messages they answer, with no id (Hocuspocus's
 * SyncStatus): the oldest unanswered send takes the next ACK. A send that times out keeps its
 * place in the line, so the ACKs after it still reach the right sends.
 */
export class OrderedAcks {
  /** @type {{ resolve: (ack: import('./index.js').Ack) => void, settled: boolean }[]} */
  #line = []

  /** @param {number} timeoutMs */
  constructor (timeoutMs) {
    this.timeoutMs = timeoutMs
  }

  /** @returns {Promise<import('./index.js').Ack>} the ACK of the message sent just now */
  expect () {
    return new Promise((resolve, reject) => {
      const entry = { resolve, settled: false }
      const timer = setTimeout(() => {
        entry.settled = true
        reject(new Error('ACK timed out'))
      }, this.timeoutMs)
      entry.resolve = (ack) => {
        clearTimeout(timer)
        if (!entry.settled) resolve(ack)
        entry.settled = true
      }
      this.#line.push(entry)
    })
  }

  /** @param {import('./index.js').Ack} ack */
  answer (ack) {
    this.#line.shift()?.resolve(ack)
  }
}
