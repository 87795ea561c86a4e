import * as decoding from 'lib0/decoding'
import * as sync from 'y-protocols/sync'
import * as Y from 'yjs'
import { now } from '../../../loadtest/clock.js'

// The client's side of a y-protocols sync message, shared by the protocols built on it (Hocuspocus,
// y-websocket); each reads its own framing first and answers step 1 in it.

const REMOTE = 'remote'

/**
 * @typedef {object} SyncingConnection
 * @property {Y.Doc | null} ydoc
 * @property {((appliedAt: number) => void) | null} onStep2 set while joining, until the server's step 2 is applied
 * @property {{ on: { update: (update: Uint8Array) => void } }} options
 */

/**
 * Reads a sync message: step 1 (the server's state vector) goes to `answerStep1`, which sends step 2;
 * the server's step 2 is applied while joining; every other update is handed to `on.update`.
 * @param {decoding.Decoder} decoder positioned at the sync message
 * @param {SyncingConnection} connection
 * @param {(stateVector: Uint8Array) => void} answerStep1
 */
export function receiveSync (decoder, connection, answerStep1) {
  const step = decoding.readVarUint(decoder)
  const payload = decoding.readVarUint8Array(decoder)
  if (step === sync.messageYjsSyncStep1) {
    answerStep1(payload)
  } else if (step === sync.messageYjsSyncStep2 && connection.onStep2) {
    Y.applyUpdate(/** @type {Y.Doc} */ (connection.ydoc), payload, REMOTE)
    connection.onStep2(now())
    connection.onStep2 = null
  } else {
    connection.options.on.update(payload)
  }
}
