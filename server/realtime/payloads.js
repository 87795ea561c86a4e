import { AppError } from '../errors.js'
import { isDocId } from '../../isomorphic/ids.js'

// Plain comparisons rather than a schema library: they run on every update.

/** @param {unknown} payload @returns {string} the document id */
export function docIdOf (payload) {
  if (!isPlainObject(payload)) {
    throw new AppError('BAD_REQUEST', 'payload must be an object')
  }
  const doc = Object.hasOwn(payload, 'doc') ? payload.doc : undefined
  if (!isDocId(doc)) {
    throw new AppError('BAD_REQUEST', '`doc` must be a document id')
  }
  return doc
}

/**
 * Takes MessagePack `bin` (a view of the frame) and notepack.io's ArrayBuffer extension (ext type 0,
 * which socket.io-msgpack-parser writes for a Uint8Array that is not a Buffer).
 * @param {any} payload an object already checked by `docIdOf` @param {string} field @param {number} maxBytes
 */
export function binaryOf (payload, field, maxBytes) {
  const value = Object.hasOwn(payload, field) ? payload[field] : undefined
  const bytes = isBytes(value) ? value : value instanceof ArrayBuffer ? new Uint8Array(value) : null
  if (!bytes) {
    throw new AppError('BAD_REQUEST', `\`${field}\` must be binary (MessagePack bin, or ext type 0); got ${describeValue(value)}`)
  }
  if (bytes.byteLength > maxBytes) {
    throw new AppError('TOO_LARGE', `\`${field}\` is ${bytes.byteLength} bytes; the limit is ${maxBytes}`)
  }
  return bytes
}

/**
 * In MessagePack's terms, so a client whose library encodes bytes otherwise learns what arrived.
 * @param {unknown} value
 */
function describeValue (value) {
  if (value === undefined) return 'nothing'
  if (value === null) return 'nil'
  if (typeof value === 'string') return `a string of ${value.length} characters`
  if (typeof value === 'number' || typeof value === 'boolean') return `a ${typeof value}`
  if (Array.isArray(value)) {
    // The parser decodes an extension other than type 0 as [type, bytes], as notepack.io does.
    if (value.length === 2 && Number.isInteger(value[0]) && isBytes(value[1])) return `ext type ${value[0]}`
    return `an array of ${value.length} items`
  }
  if (value instanceof Date) return 'a timestamp'
  // notepack's browser build encodes any typed array so.
  if (isPlainObject(value)) return `a map of ${Object.keys(value).length} keys`
  return 'a value of another kind'
}

// Exact checks: a decoded `{ __proto__: <bin> }` is `instanceof Uint8Array` yet throws on `.byteLength`.

/** @param {unknown} value @returns {value is Record<string, unknown>} */
function isPlainObject (value) {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype
}

/** @param {unknown} value @returns {value is Uint8Array} */
function isBytes (value) {
  return ArrayBuffer.isView(value) && value instanceof Uint8Array
}
