import { AppError } from '../errors.js'
import { DOC_ID_PATTERN } from '../protocol.js'

// Checks for socket event payloads. They run on every update, so they are plain comparisons rather
// than a schema library.

/**
 * @param {unknown} payload
 * @returns {string} the document id
 */
export function docIdOf (payload) {
  if (!isPlainObject(payload)) {
    throw new AppError('BAD_REQUEST', 'payload must be an object')
  }
  const doc = Object.hasOwn(payload, 'doc') ? payload.doc : undefined
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
  const value = Object.hasOwn(payload, field) ? payload[field] : undefined
  if (!isBytes(value)) {
    throw new AppError('BAD_REQUEST', `\`${field}\` must be binary (a Uint8Array)`)
  }
  if (value.byteLength > maxBytes) {
    throw new AppError('TOO_LARGE', `\`${field}\` is ${value.byteLength} bytes; the limit is ${maxBytes}`)
  }
  return value
}

// A MessagePack map with a `__proto__` key decodes to an object whose prototype is whatever that key
// held: `{ __proto__: <bin> }` passes `instanceof Uint8Array` yet throws on `.byteLength`, and
// `{ __proto__: { doc } }` carries an inherited `doc`. So types are checked exactly: own fields of a
// plain object, and real byte arrays.

/** @param {unknown} value @returns {value is Record<string, unknown>} */
function isPlainObject (value) {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype
}

/** @param {unknown} value @returns {value is Uint8Array} */
function isBytes (value) {
  return ArrayBuffer.isView(value) && value instanceof Uint8Array
}
