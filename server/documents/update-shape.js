import * as decoding from 'lib0/decoding'
import { AppError } from '../errors.js'

// Reads a v1 update from its bytes, in the order Yjs does, without building structs, to answer what
// decoding cannot: each section's client (Yjs keeps only a client's last section) and how many
// values the content holds (each costs far more heap than the bytes that name it).
/** The bits of a struct's info byte, and its content kinds, as Yjs writes them (version 1). */
export const HAS_ORIGIN = 0x80
export const HAS_RIGHT_ORIGIN = 0x40
export const HAS_PARENT_SUB = 0x20
export const CONTENT_REF = 0x1f
export const CONTENT_DELETED = 1
export const CONTENT_STRING = 4
const SKIP = 10
const TYPE_XML_ELEMENT = 3
const TYPE_XML_HOOK = 5
const MAX_ANY_DEPTH = 64

/**
 * What an update holds, read without decoding it.
 * @typedef {object} UpdateShape
 * @property {number[]} sectionClients the client of each section, in order
 * @property {number} values of content other than text and types: JSON and `Any` elements (nested ones
 *   too), embeds, formats, binaries
 * @property {number} subdocuments items holding a subdocument
 */

/** Throws on bytes that are not a version-1 update. @param {Uint8Array} update @returns {UpdateShape} */
export function readShape (update) {
  const decoder = decoding.createDecoder(update)
  const shape = { sectionClients: /** @type {number[]} */ ([]), values: 0, subdocuments: 0 }
  const sections = decoding.readVarUint(decoder)
  for (let section = 0; section < sections; section++) {
    const count = decoding.readVarUint(decoder)
    shape.sectionClients.push(decoding.readVarUint(decoder))
    decoding.readVarUint(decoder) // clock
    for (let i = 0; i < count; i++) readStruct(decoder, shape)
  }
  const deleting = decoding.readVarUint(decoder)
  for (let i = 0; i < deleting; i++) {
    decoding.readVarUint(decoder) // client
    const ranges = decoding.readVarUint(decoder)
    for (let j = 0; j < ranges; j++) {
      decoding.readVarUint(decoder)
      decoding.readVarUint(decoder)
    }
  }
  return shape
}

/**
 * Refuses a stored document past its limits (stored before they were checked, or under larger ones)
 * before any of it is decoded. @param {Uint8Array[]} updates @param {number} maxDocStructs
 */
export function checkStoredShape (updates, maxDocStructs) {
  let values = 0
  for (const update of updates) {
    const shape = readShape(update)
    if (shape.subdocuments > 0) throw new AppError('TOO_LARGE', 'the stored document holds subdocuments')
    values += shape.values
    if (values > maxDocStructs) throw new AppError('TOO_LARGE', `the stored document holds more than ${maxDocStructs} values`)
  }
}

/** Whether Yjs holds structs or deletions back because what they build on is missing. @param {import('yjs').Doc} ydoc */
export function hasPending (ydoc) {
  return ydoc.store.pendingStructs !== null || ydoc.store.pendingDs !== null
}

/** @param {decoding.Decoder} decoder @param {UpdateShape} shape */
function readStruct (decoder, shape) {
  const info = decoding.readUint8(decoder)
  const content = info & CONTENT_REF
  if (content === 0 || content === SKIP) {
    decoding.readVarUint(decoder) // length
    return
  }
  if (info & HAS_ORIGIN) readId(decoder)
  if (info & HAS_RIGHT_ORIGIN) readId(decoder)
  if ((info & (HAS_ORIGIN | HAS_RIGHT_ORIGIN)) === 0) {
    if (decoding.readVarUint(decoder) === 1) decoding.readVarString(decoder)
    else readId(decoder)
    if (info & HAS_PARENT_SUB) decoding.readVarString(decoder)
  }
  switch (content) {
    case CONTENT_DELETED:
      decoding.readVarUint(decoder)
      return
    case 2: { // JSON: each value a JSON text
      const length = decoding.readVarUint(decoder)
      for (let i = 0; i < length; i++) shape.values += jsonValues(decoding.readVarString(decoder))
      return
    }
    case 3: // binary
      decoding.readVarUint8Array(decoder)
      shape.values++
      return
    case CONTENT_STRING:
      decoding.readVarString(decoder)
      return
    case 5: // embed
      shape.values += jsonValues(decoding.readVarString(decoder))
      return
    case 6: // format
      decoding.readVarString(decoder)
      shape.values += jsonValues(decoding.readVarString(decoder))
      return
    case 7: { // type
      const type = decoding.readVarUint(decoder)
      if (type === TYPE_XML_ELEMENT || type === TYPE_XML_HOOK) decoding.readVarString(decoder)
      return
    }
    case 8: { // Any
      const length = decoding.readVarUint(decoder)
      for (let i = 0; i < length; i++) shape.values += anyValues(decoder, 0)
      return
    }
    case 9: // subdocument
      decoding.readVarString(decoder)
      anyValues(decoder, 0)
      shape.subdocuments++
      return
  }
  throw new Error(`unknown content ${content}`)
}

/** @param {decoding.Decoder} decoder */
function readId (decoder) {
  decoding.readVarUint(decoder)
  decoding.readVarUint(decoder)
}

/**
 * Skips one lib0 `Any` value; returns how many values it holds, itself included.
 * @param {decoding.Decoder} decoder @param {number} depth
 * @returns {number}
 */
function anyValues (decoder, depth) {
  if (depth > MAX_ANY_DEPTH) throw new Error('value nested too deep')
  const tag = decoding.readUint8(decoder)
  switch (tag) {
    case 127: case 126: case 121: case 120: return 1
    case 125: decoding.readVarInt(decoder); return 1
    case 124: decoding.readFloat32(decoder); return 1
    case 123: decoding.readFloat64(decoder); return 1
    case 122: decoding.readBigInt64(decoder); return 1
    case 119: decoding.readVarString(decoder); return 1
    case 116: decoding.readVarUint8Array(decoder); return 1
    case 118: {
      const length = decoding.readVarUint(decoder)
      let values = 1
      for (let i = 0; i < length; i++) {
        decoding.readVarString(decoder)
        values += anyValues(decoder, depth + 1)
      }
      return values
    }
    case 117: {
      const length = decoding.readVarUint(decoder)
      let values = 1
      for (let i = 0; i < length; i++) values += anyValues(decoder, depth + 1)
      return values
    }
  }
  throw new Error(`unknown value tag ${tag}`)
}

/** An upper bound on the values a JSON text parses to (separators in strings overcount). @param {string} text */
function jsonValues (text) {
  let values = 1
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0x2c || code === 0x5b || code === 0x7b) values++ // , [ {
  }
  return values
}
