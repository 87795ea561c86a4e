import * as Y from 'yjs'
import { AppError } from '../errors.js'

/**
 * Refuses bytes that are not a Yjs update before they reach a live document: decoding parses every
 * struct and the delete set, so truncated or garbage input throws here instead of half-applying.
 * @param {Uint8Array} update
 */
export function checkUpdate (update) {
  try {
    Y.decodeUpdate(update)
  } catch {
    throw new AppError('INVALID_UPDATE', 'update is not a valid Yjs update')
  }
}
