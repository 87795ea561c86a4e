import { EVENTS } from '../../isomorphic/events.js'

/**
 * Closes a connection once `maxInvalidUpdates` of its updates were refused as INVALID_UPDATE (0:
 * never). An honest client sends none (a mismatch with the document is OUT_OF_SYNC, not invalid),
 * while each one costs the server a full decode of up to MAX_UPDATE_BYTES, and one that slips past
 * the checks and fails while applying reloads the document for every editor.
 * @param {import('socket.io').Socket} socket
 * @param {number} maxInvalidUpdates
 * @param {import('pino').Logger} logger
 * @returns {(event: string, error: import('../../isomorphic/error-codes.js').ErrorBody) => void} told of every refusal
 */
export function invalidUpdateLimit (socket, maxInvalidUpdates, logger) {
  let invalid = 0
  return (event, error) => {
    if (maxInvalidUpdates === 0 || event !== EVENTS.UPDATE || error.code !== 'INVALID_UPDATE') return
    invalid++
    if (invalid !== maxInvalidUpdates) return
    logger.warn({ invalid }, 'closing a connection that keeps sending invalid updates')
    // After the refusal's ACK has gone out.
    setImmediate(() => socket.disconnect(true))
  }
}
