import { AppError } from '../errors.js'
import { DOC_ID_PATTERN } from '../protocol.js'

// Checks for socket event payloads. They run on every update, so they are plain comparisons rather
// than a schema library.

/**
 * @param {unknown} payload
 * @returns {string} the document id
 */
export function docIdOf (payload) {
  if (typeof payload !== 'object' || payload === null) {
    throw new AppError('BAD_REQUEST', 'payload must be an object')
  }
  const doc = /** @type {{ doc?: unknown }} */ (payload).doc
  if (typeof doc !== 'string' || !DOC_ID_PATTERN.test(doc)) {
    throw new AppError('BAD_REQUEST', '`doc` must be a document id')
  }
  return doc
}

/**
 * A binary field (MessagePack binary, decoded as a Buffer), at most `maxBytes` long.
 * @param {any} payload an object already checked by `docIdOf`
 * @param {string} field
 * @param {number} maxBytes
 * @returns {Uint8Array}
 */
export function binaryOf (payload, field, maxBytes) {
  const value = payload[field]
  if (!(value instanceof Uint8Array)) {
    throw new AppError('BAD_REQUEST', `\`${field}\` must be binary (a Uint8Array)`)
  }
  if (value.byteLength > maxBytes) {
    throw new AppError('TOO_LARGE', `\`${field}\` is ${value.byteLength} bytes; the limit is ${maxBytes}`)
  }
  return value
}
