import * as Y from 'yjs'
import { AppError } from '../errors.js'
import { TEXT_NAME } from '../../isomorphic/events.js'
import { acceptUpdate, catchUp } from './accept-update.js'
import { editClientOf, rememberEdit } from './edit-client.js'
import { revisionOf } from './revision.js'
import { editsBetween, isHighSurrogate, isLowSurrogate } from './text-diff.js'
/** @import { LiveDoc, Author } from './live-doc.js' */
/** @import { TextEdit } from './text-diff.js' */

// Edits made on the server (REST) to a document's `content` text: turned into one Yjs update and
// accepted as an editor's update is (accept-update.js), so they are checked, applied, relayed to
// every editor, and stored before the promise resolves.

/**
 * @typedef {{ config: import('./accept-update.js').AcceptDeps['config'], logger: import('pino').Logger }} EditDeps
 * @typedef {{ revision: string, length: number }} EditResult the document's revision and text length once stored
 */

/**
 * Replaces the text with `text` by the edits that turn one into the other (text-diff.js), so that
 * editors' concurrent edits and cursors outside the changed parts survive: a forward edit, also for
 * restoring an earlier text. An unchanged text changes and stores nothing. With a shared store the
 * copy catches up first, so the difference is taken from the newest text; given `ifRevision`, the
 * document must still be at it (else CONFLICT).
 * @param {LiveDoc} doc @param {string} text @param {Author} author @param {EditDeps} deps
 * @param {{ ifRevision?: string }} [options]
 * @returns {Promise<EditResult>}
 */
export async function replaceText (doc, text, author, deps, { ifRevision } = {}) {
  await catchUp(doc, deps.logger)
  if (ifRevision !== undefined) checkRevision(doc, ifRevision)
  return takeEdits(doc, editsBetween(textOf(doc), text), author, deps)
}

/**
 * Applies `edits` (sorted, not overlapping) made against the text at `revision`; CONFLICT, with the
 * current revision in its details, if the document has moved on since.
 * @param {LiveDoc} doc @param {string} revision @param {TextEdit[]} edits @param {Author} author
 * @param {EditDeps} deps @returns {Promise<EditResult>}
 */
export async function applyEdits (doc, revision, edits, author, deps) {
  await catchUp(doc, deps.logger)
  checkRevision(doc, revision)
  checkPositions(edits, textOf(doc))
  return takeEdits(doc, edits, author, deps)
}

/** CONFLICT, with the current revision in its details, unless the document is at `revision`. @param {LiveDoc} doc @param {string} revision */
function checkRevision (doc, revision) {
  const current = revisionOf(doc.ydoc)
  if (current !== revision) {
    throw new AppError('CONFLICT', `the document is at revision ${current}: read its text again and make the change anew`, { revision: current })
  }
}

/**
 * From the copy's text to storage without a turn in between: no other edit of this copy's client
 * can come between reading the text and taking the update that builds on it.
 * @param {LiveDoc} doc @param {TextEdit[]} edits @param {Author} author @param {EditDeps} deps
 * @returns {Promise<EditResult>}
 */
async function takeEdits (doc, edits, author, { config, logger }) {
  if (edits.length > 0) {
    const clientId = editClientOf(doc)
    const update = updateOf(doc.ydoc, clientId, edits)
    if (update !== null) {
      rememberEdit(doc, clientId, update)
      await acceptUpdate(doc, update, { author }, { config }, logger)
    }
  }
  return { revision: revisionOf(doc.ydoc), length: doc.ydoc.getText(TEXT_NAME).length }
}

/**
 * BAD_REQUEST when the text holds embedded objects: each takes a position in the Y.Text and none in
 * the string, so no position of the string would name the same place in the document.
 * @param {LiveDoc} doc
 */
function textOf (doc) {
  const ytext = doc.ydoc.getText(TEXT_NAME)
  const text = ytext.toString()
  if (text.length !== ytext.length) throw new AppError('BAD_REQUEST', 'the text holds embedded objects, which a change of its text cannot place')
  return text
}

/**
 * The update that makes `edits` to `ydoc`'s text under `clientId`, holding only what they change.
 * Made on a copy: the live document takes it only once it is checked. Null when they change nothing.
 * @param {Y.Doc} ydoc @param {number} clientId @param {TextEdit[]} edits
 */
export function updateOf (ydoc, clientId, edits) {
  const scratch = new Y.Doc()
  try {
    Y.applyUpdate(scratch, Y.encodeStateAsUpdate(ydoc))
    // Set after loading: Yjs gives a document a new id when an update it loads holds edits under its own.
    scratch.clientID = clientId
    /** @type {Uint8Array | null} */
    let update = null
    scratch.on('update', (/** @type {Uint8Array} */ made) => { update = made })
    const text = scratch.getText(TEXT_NAME)
    scratch.transact(() => {
      // From the last: each edit's `at` holds while those after it are made.
      for (let i = edits.length - 1; i >= 0; i--) {
        const { at, delete: length, insert } = edits[i]
        if (length > 0) text.delete(at, length)
        if (insert !== '') text.insert(at, insert)
      }
    })
    return /** @type {Uint8Array | null} */ (update)
  } finally {
    scratch.destroy()
  }
}

/**
 * BAD_REQUEST, naming each edit, for one that reaches past the text or cuts a character (a
 * surrogate pair) in two. @param {TextEdit[]} edits @param {string} text
 */
function checkPositions (edits, text) {
  const details = []
  for (const [i, { at, delete: length }] of edits.entries()) {
    if (at + length > text.length) {
      details.push({ field: `edits.${i}`, message: `reaches past the end of the text (${text.length} UTF-16 code units)` })
    } else if (splitsPair(text, at) || splitsPair(text, at + length)) {
      details.push({ field: `edits.${i}`, message: 'cuts a character (a UTF-16 surrogate pair) in two' })
    }
  }
  if (details.length > 0) throw new AppError('BAD_REQUEST', 'the edits do not fit the text', details)
}

/** @param {string} text @param {number} at */
const splitsPair = (text, at) => at > 0 && at < text.length &&
  isHighSurrogate(text.charCodeAt(at - 1)) && isLowSurrogate(text.charCodeAt(at))
