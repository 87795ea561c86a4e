import * as Y from 'yjs'
import { AppError } from '../errors.js'
import { readTyping } from './typing-update.js'
import { readShape } from './update-shape.js'
import { checkReferences, outOfSync } from './update-graph.js'

/**
 * What one document may hold (config.js), in the units that cost memory, which bytes do not bound.
 * @typedef {{ maxDocStructs: number, maxDocClients: number, maxTypeDepth: number, rootTypes: readonly string[] }} DocLimits
 */

/** @typedef {{ structs: number, clients: number }} Additions what an update may add: structs, and new clients */

/** @type {Additions} */
const NOTHING = Object.freeze({ structs: 0, clients: 0 })

/** @type {WeakMap<readonly string[], ReadonlySet<string>>} */
const rootSets = new WeakMap()

/**
 * Refuses what is not a Yjs update or cannot be integrated, before it reaches the document. Typing is
 * read without decoding (typing-update.js), anything else checked in full. Returns what it may add.
 * @param {Uint8Array} update @param {Y.Doc} ydoc @param {DocLimits} limits
 * @param {Additions} [unapplied] what updates taken but not applied to `ydoc` yet may add
 */
export function checkUpdate (update, ydoc, limits, unapplied = NOTHING) {
  const { added, ranges, clients, values } = readTyping(update, ydoc, rootSetOf(limits.rootTypes)) ?? checkInFull(update, ydoc, limits)
  // The most the document can grow by: a new struct may cut two items in two (origin, right origin),
  // a deleted range the two at its ends; other content's values cost about a struct each.
  const structs = 3 * added + 2 * ranges + values
  if (structs > 0 && structCount(ydoc) + unapplied.structs + structs > limits.maxDocStructs) {
    throw new AppError('TOO_LARGE', `the document would hold more than ${limits.maxDocStructs} structs`)
  }
  // Checked whatever the structs: each client costs every later transaction on the document.
  if (clients > 0 && ydoc.store.clients.size + unapplied.clients + clients > limits.maxDocClients) {
    throw new AppError('TOO_LARGE', `the document would hold edits from more than ${limits.maxDocClients} clients (editor sessions)`)
  }
  return { structs, clients }
}

/**
 * Decodes every struct and the delete set, so garbage throws here instead of half-applying. An update
 * that builds on what the document lacks, or names a client in two sections (Yjs keeps only the
 * last), would stay pending in memory and in the log for good: it is OUT_OF_SYNC, and an honest
 * client rejoins and sends the whole difference.
 * @param {Uint8Array} update @param {Y.Doc} ydoc @param {DocLimits} limits
 */
export function checkInFull (update, ydoc, { maxTypeDepth, rootTypes, maxDocStructs }) {
  let shape
  try {
    shape = readShape(update)
  } catch {
    throw new AppError('INVALID_UPDATE', 'update is not a valid Yjs update')
  }
  if (new Set(shape.sectionClients).size !== shape.sectionClients.length) {
    throw new AppError('INVALID_UPDATE', 'update is not valid: a client appears in more than one section')
  }
  if (shape.subdocuments > 0) throw new AppError('INVALID_UPDATE', 'update is not valid: subdocuments are not supported')
  // Refused before decoding, which would build every value.
  if (structCount(ydoc) + shape.values > maxDocStructs) {
    throw new AppError('TOO_LARGE', `the document would hold more than ${maxDocStructs} structs`)
  }
  let structs, ds
  try {
    ({ structs, ds } = Y.decodeUpdate(update))
  } catch {
    throw new AppError('INVALID_UPDATE', 'update is not a valid Yjs update')
  }
  // What the document will hold of each client (structs come grouped by client, in clock order).
  /** @type {Map<number, number>} */
  const next = new Map()
  /** @param {number} client */
  const nextClock = client => next.get(client) ?? Y.getState(ydoc.store, client)
  let added = 0
  let clients = 0
  for (const struct of structs) {
    if (struct instanceof Y.Skip) continue
    const { client, clock } = struct.id
    const have = nextClock(client)
    if (have === 0) clients++
    if (clock > have) throw outOfSync()
    if (clock + struct.length > have) added++
    next.set(client, Math.max(have, clock + struct.length))
  }
  let ranges = 0
  for (const [client, deletions] of ds.clients) {
    const have = nextClock(client)
    for (const { clock, len } of deletions) if (clock + len > have) throw outOfSync()
    ranges += deletions.length
  }
  // An update that could never be integrated is INVALID_UPDATE whatever its size.
  checkReferences(structs, ydoc, { rootTypes: rootSetOf(rootTypes), maxTypeDepth })
  return { added, ranges, clients, values: shape.values }
}

/** Structs the document holds now (adjacent ones Yjs merged count once). @param {Y.Doc} ydoc */
export function structCount (ydoc) {
  let count = 0
  for (const structs of ydoc.store.clients.values()) count += structs.length
  return count
}

/** @param {readonly string[]} names */
function rootSetOf (names) {
  let set = rootSets.get(names)
  if (!set) {
    set = new Set(names)
    rootSets.set(names, set)
  }
  return set
}
