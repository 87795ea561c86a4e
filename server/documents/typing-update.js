import * as decoding from 'lib0/decoding'
import * as Y from 'yjs'
import { CONTENT_DELETED, CONTENT_REF, CONTENT_STRING, HAS_ORIGIN, HAS_PARENT_SUB, HAS_RIGHT_ORIGIN } from './update-shape.js'

// Most updates are typing: one client's new text next to what the document has, and deletions. Such
// an update is read straight from its bytes, in Yjs's v1 order, without building `Y.decodeUpdate`'s
// objects (docs/PERFORMANCE.md, "ACKs written to the WebSocket directly, and typing checked from
// its bytes"); anything else gets the full check (update-check.js), which gives every refusal.

/**
 * @param {Uint8Array} update @param {Y.Doc} ydoc @param {ReadonlySet<string>} rootTypes
 * @returns {{ added: number, ranges: number, clients: number, values: number } | null} null when not plain typing, or when anything in it would be refused
 */
export function readTyping (update, ydoc, rootTypes) {
  try {
    return read(decoding.createDecoder(update), ydoc, rootTypes)
  } catch {
    // Bytes Yjs cannot read: the full check refuses them.
    return null
  }
}

/** @param {decoding.Decoder} decoder @param {Y.Doc} ydoc @param {ReadonlySet<string>} rootTypes */
function read (decoder, ydoc, rootTypes) {
  const sections = decoding.readVarUint(decoder)
  if (sections > 1) return null
  let client = -1
  let have = 0
  let end = 0
  let added = 0
  if (sections === 1) {
    const count = decoding.readVarUint(decoder)
    client = decoding.readVarUint(decoder)
    const start = decoding.readVarUint(decoder)
    have = Y.getState(ydoc.store, client)
    if (start > have) return null
    /** A reference is to the document, or to an earlier struct of this update. @param {number} refClient @param {number} refClock @param {number} clock */
    const known = (refClient, refClock, clock) => refClock < (refClient === client ? have : Y.getState(ydoc.store, refClient)) ||
      (refClient === client && refClock >= start && refClock < clock)
    let clock = start
    for (let i = 0; i < count; i++) {
      const info = decoding.readUint8(decoder)
      const content = info & CONTENT_REF
      if (content !== CONTENT_STRING && content !== CONTENT_DELETED) return null
      const placed = (info & (HAS_ORIGIN | HAS_RIGHT_ORIGIN)) !== 0
      if (info & HAS_ORIGIN && !known(decoding.readVarUint(decoder), decoding.readVarUint(decoder), clock)) return null
      if (info & HAS_RIGHT_ORIGIN && !known(decoding.readVarUint(decoder), decoding.readVarUint(decoder), clock)) return null
      if (!placed) {
        // Placed by its parent: a root type by name is typing; a type by id is left to the full check.
        if (decoding.readVarUint(decoder) !== 1) return null
        if (!rootTypes.has(decoding.readVarString(decoder)) || info & HAS_PARENT_SUB) return null
      }
      const length = content === CONTENT_STRING ? stringLength(decoder) : decoding.readVarUint(decoder)
      if (length === 0) return null
      if (clock + length > have) added++
      clock += length
    }
    end = clock
  }
  let ranges = 0
  const deleting = decoding.readVarUint(decoder)
  for (let i = 0; i < deleting; i++) {
    const deleted = decoding.readVarUint(decoder)
    const count = decoding.readVarUint(decoder)
    const known = deleted === client ? Math.max(have, end) : Y.getState(ydoc.store, deleted)
    for (let j = 0; j < count; j++) {
      const clock = decoding.readVarUint(decoder)
      if (clock + decoding.readVarUint(decoder) > known) return null
    }
    ranges += count
  }
  return { added, ranges, clients: have === 0 && end > 0 ? 1 : 0, values: 0 }
}

/**
 * A string's length as Yjs counts it (UTF-16 units): its byte count when ASCII, else decoded as Yjs
 * does, which refuses bytes that are not UTF-8. @param {decoding.Decoder} decoder
 */
function stringLength (decoder) {
  const start = decoder.pos
  const bytes = decoding.readVarUint8Array(decoder)
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] >= 0x80) {
      decoder.pos = start
      return decoding.readVarString(decoder).length
    }
  }
  return bytes.length
}
