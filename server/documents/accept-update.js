import { AppError } from '../errors.js'
import { checkUpdate } from './update-check.js'

// The durability rules of a document's update, in one place: what an update must be to be taken,
// and in which order it is checked, applied, sent to the other editors and stored. The transport
// (realtime/doc-handlers.js) parses, checks membership and rates, then awaits this and replies.

/**
 * @typedef {object} AcceptDeps
 * @property {Pick<import('../config.js').Config, 'maxDocBytes' | 'maxDocStructs' | 'maxDocClients' | 'maxTypeDepth' | 'rootTypes'>} config
 */

/**
 * Takes an update into a document; resolves once it is stored, which is what the ACK means.
 *
 * 1. Checked before it touches the document: size, decoding, and that it builds only on what the
 *    document has. The document's copy may not have applied everything yet: the updates taken this
 *    turn, and in a shared store the writes received from other processes. One that builds on those
 *    has them applied and is checked again. What it builds on may also have been stored by another
 *    process a moment ago (its editors can see an update before this copy reads it): the copy then
 *    catches up once, and it is checked again.
 * 2. Taken (LiveDoc.take): at the end of the turn, applied with the turn's other updates in one
 *    transaction. One that still fails halfway leaves part of it in memory, so it is refused and
 *    the copy is reloaded from storage.
 * 3. Sent to the other editors in this process as soon as it is applied (LiveDoc's `onApplied`).
 * 4. Stored, with the updates that arrived meanwhile (group commit). A refused write reloads the
 *    copy (LiveDoc): it must not hold what storage refused.
 * @param {import('./live-doc.js').LiveDoc} doc
 * @param {Uint8Array} update
 * @param {import('socket.io').Socket} sender the editor it came from
 * @param {AcceptDeps} deps
 * @param {import('pino').Logger} logger the sender's connection's
 */
export async function acceptUpdate (doc, update, sender, { config }, logger) {
  if (doc.bytes + update.byteLength > config.maxDocBytes) {
    throw new AppError('TOO_LARGE', `the document would exceed ${config.maxDocBytes} bytes`)
  }
  let additions = checkInMemory(doc, update, config)
  if (additions === null) {
    await catchUp(doc, logger)
    additions = checkUpdate(update, doc.ydoc, config)
  }
  doc.bytes += update.byteLength
  // A peer may see an update that storage then refuses: it sends it back when it rejoins the
  // reloaded document. Other processes learn of it from the store's feed once it is stored.
  try {
    await doc.take(update, sender, additions)
  } catch (err) {
    if (err instanceof AppError && err.code === 'INVALID_UPDATE') throw err
    // Storage health logs the failure once per interval.
    logger.debug({ err, doc: doc.id }, 'update could not be stored')
    throw new AppError('UNAVAILABLE', 'the update could not be stored; retry')
  }
}

/**
 * Checks an update against the copy as applied so far, counting the structs and clients the updates
 * taken this turn may add; one that builds on what the copy lacks is checked again with everything
 * waiting applied. Returns what it may add, or null when it still builds on what the copy lacks in a
 * shared store: the stored log may have it.
 * @param {import('./live-doc.js').LiveDoc} doc
 * @param {Uint8Array} update
 * @param {AcceptDeps['config']} config
 * @returns {import('./update-check.js').Additions | null}
 */
function checkInMemory (doc, update, config) {
  try {
    return checkUpdate(update, doc.appliedYdoc, config, doc.takenAdditions)
  } catch (err) {
    if (!isOutOfSync(err) || !doc.hasUnapplied) return outOfSyncInSharedStore(err, doc)
  }
  try {
    return checkUpdate(update, doc.ydoc, config)
  } catch (err) {
    return outOfSyncInSharedStore(err, doc)
  }
}

/**
 * Null for an update out of sync with the copy of a shared store's document; any other error is thrown.
 * @param {unknown} err
 * @param {import('./live-doc.js').LiveDoc} doc
 * @returns {null}
 */
function outOfSyncInSharedStore (err, doc) {
  if (isOutOfSync(err) && doc.store.shared) return null
  throw err
}

/** @param {unknown} err */
const isOutOfSync = err => err instanceof AppError && err.code === 'OUT_OF_SYNC'

/**
 * Brings a copy up to date with what other processes stored; UNAVAILABLE if storage cannot say.
 * @param {import('./live-doc.js').LiveDoc} doc
 * @param {import('pino').Logger} logger
 */
export async function catchUp (doc, logger) {
  try {
    await doc.catchUp()
  } catch (err) {
    logger.warn({ err, doc: doc.id }, 'catch-up failed')
    throw new AppError('UNAVAILABLE', 'document could not be brought up to date; retry')
  }
}
