import * as Y from 'yjs'
import { AppError } from '../errors.js'
import { checkUpdate } from './update-check.js'

// The durability rules of a document's update, in one place: what an update must be to be taken,
// and in which order it is checked, applied, sent to the other editors and stored. The transport
// (realtime/doc-handlers.js) parses, checks membership and rates, then awaits this and replies.

/**
 * @typedef {object} AcceptDeps
 * @property {Pick<import('../config.js').Config, 'maxDocBytes' | 'maxDocStructs' | 'maxTypeDepth' | 'rootTypes'>} config
 * @property {import('./doc-registry.js').DocRegistry} registry
 */

/**
 * Takes an update into a document; resolves once it is stored, which is what the ACK means.
 *
 * 1. Checked before it touches the document: size, decoding, and that it builds only on what the
 *    document has. In a shared store, what it builds on may have been stored by another process a
 *    moment ago (its editors can see an update before this copy applies or reads it): the writes
 *    received from other processes are applied, or the copy catches up once, and it is checked
 *    again.
 * 2. Applied; an update that still fails halfway leaves part of it in memory, so the copy is dropped
 *    and reloaded from storage.
 * 3. The editors in this process get it at once (`relay`, from everyone but the sender).
 * 4. Stored, with the updates that arrived meanwhile (group commit). A refused write reloads the
 *    copy (LiveDoc): it must not hold what storage refused.
 * @param {import('./live-doc.js').LiveDoc} doc
 * @param {Uint8Array} update
 * @param {import('socket.io').Socket} sender the applying transaction's origin, left out of the relay
 * @param {{ update: (update: Uint8Array, sender: import('socket.io').Socket) => void }} relay the document's room in this process
 * @param {AcceptDeps} deps
 * @param {import('pino').Logger} logger the sender's connection's
 */
export async function acceptUpdate (doc, update, sender, relay, { config, registry }, logger) {
  if (doc.bytes + update.byteLength > config.maxDocBytes) {
    throw new AppError('TOO_LARGE', `the document would exceed ${config.maxDocBytes} bytes`)
  }
  if (!checkInMemory(doc, update, config)) {
    await catchUp(doc, logger)
    checkUpdate(update, doc.ydoc, config)
  }
  doc.bytes += update.byteLength
  try {
    Y.applyUpdate(doc.appliedYdoc, update, sender)
  } catch (err) {
    logger.warn({ err, doc: doc.id }, 'update failed to apply; reloading the document')
    registry.invalidate(doc.id).catch(evictErr => logger.error({ err: evictErr, doc: doc.id }, 'evict failed'))
    throw new AppError('INVALID_UPDATE', 'update could not be applied')
  }
  // A peer may see an update that storage then refuses: it sends it back when it rejoins the
  // reloaded document. Other processes learn of it from the store's feed once it is stored.
  relay.update(update, sender)
  try {
    await doc.persist(update)
  } catch (err) {
    // Storage health logs the failure once per interval.
    logger.debug({ err, doc: doc.id }, 'update could not be stored')
    throw new AppError('UNAVAILABLE', 'the update could not be stored; retry')
  }
}

/**
 * Checks an update against the copy as applied so far; in a shared store, one that builds on what
 * that lacks is checked again with the writes received from other processes applied. False when it
 * still builds on what the copy lacks: the stored log may have it.
 * @param {import('./live-doc.js').LiveDoc} doc
 * @param {Uint8Array} update
 * @param {AcceptDeps['config']} config
 * @returns {boolean}
 */
function checkInMemory (doc, update, config) {
  try {
    checkUpdate(update, doc.appliedYdoc, config)
    return true
  } catch (err) {
    if (!isOutOfSync(err) || !doc.store.shared) throw err
  }
  if (!doc.hasWaiting) return false
  try {
    checkUpdate(update, doc.ydoc, config)
    return true
  } catch (err) {
    if (!isOutOfSync(err)) throw err
    return false
  }
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
