import { AppError } from '../errors.js'
import { checkUpdate } from './update-check.js'
/** @import { LiveDoc } from './live-doc.js' */

// An update's rules in one place: checked, applied, relayed, stored, in that order. An editor's
// (realtime/doc-handlers.js checks membership and rates, then awaits this and replies) and an edit
// made on the server for the REST API (text-edit.js) go through the same rules.

/**
 * @typedef {object} AcceptDeps
 * @property {Pick<import('../config.js').Config, 'maxDocBytes' | 'maxDocStructs' | 'maxDocClients' | 'maxTypeDepth' | 'rootTypes'>} config
 */

/**
 * Resolves once the update is stored, which is what the ACK means. One that builds on what the copy
 * lacks is checked again after a catch-up in a shared store: another process may have stored it a
 * moment ago (docs/ARCHITECTURE.md, "The hand-offs of one update from socket to ACK").
 * @param {LiveDoc} doc @param {Uint8Array} update @param {import('./live-doc.js').UpdateSource} from
 * @param {AcceptDeps} deps @param {import('pino').Logger} logger the sender's connection's, or the request's
 */
export async function acceptUpdate (doc, update, from, { config }, logger) {
  if (doc.bytes + update.byteLength > config.maxDocBytes) {
    throw new AppError('TOO_LARGE', `the document would exceed ${config.maxDocBytes} bytes`)
  }
  let additions = checkInMemory(doc, update, config)
  if (additions === null) {
    await catchUp(doc, logger)
    additions = checkUpdate(update, doc.ydoc, config)
  }
  doc.bytes += update.byteLength
  // An editor may see an update that storage then refuses: it sends it back when it rejoins.
  try {
    await doc.take(update, from, additions)
  } catch (err) {
    if (err instanceof AppError && err.code === 'INVALID_UPDATE') throw err
    // Storage health logs the failure once per interval.
    logger.debug({ err, doc: doc.id }, 'update could not be stored')
    throw new AppError('UNAVAILABLE', 'the update could not be stored; retry')
  }
}

/**
 * Checks against the copy as applied so far, then with everything applied; null when it still
 * builds on what the copy lacks in a shared store (the stored log may have it).
 * @param {LiveDoc} doc @param {Uint8Array} update @param {AcceptDeps['config']} config
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

/** @param {unknown} err @param {LiveDoc} doc @returns {null} */
function outOfSyncInSharedStore (err, doc) {
  if (isOutOfSync(err) && doc.store.shared) return null
  throw err
}

/** @param {unknown} err */
const isOutOfSync = err => err instanceof AppError && err.code === 'OUT_OF_SYNC'

/**
 * UNAVAILABLE if storage cannot say what other processes stored.
 * @param {LiveDoc} doc @param {import('pino').Logger} logger
 */
export async function catchUp (doc, logger) {
  try {
    await doc.catchUp()
  } catch (err) {
    logger.warn({ err, doc: doc.id }, 'catch-up failed')
    throw new AppError('UNAVAILABLE', 'document could not be brought up to date; retry')
  }
}
