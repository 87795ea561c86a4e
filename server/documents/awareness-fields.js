import { AppError } from '../errors.js'
import { awarenessUserProblem } from '../../isomorphic/awareness-user.js'
import { TEXT_NAME } from '../../isomorphic/events.js'

// An awareness state keeps only the fields editors draw, each checked: y-codemirror.next and y-monaco
// hand positions to Yjs as they come, and one that names nothing throws inside the editor's drawing,
// which then never draws a caret again.

/**
 * `user`, `cursor` and `selection` rebuilt from their checked parts, as JSON; INVALID_UPDATE for a
 * field the editors could not draw. @param {unknown} state a parsed awareness state, not null
 */
export function keptState (state) {
  if (!isRecord(state)) throw invalid('a state must be an object or null')
  /** @type {Record<string, unknown>} */
  const kept = {}
  if (state.user !== undefined) kept.user = userOf(state.user)
  if (state.cursor !== undefined) kept.cursor = selectionOf(state.cursor, 'cursor')
  if (state.selection !== undefined) kept.selection = selectionOf(state.selection, 'selection')
  return JSON.stringify(kept)
}

/** @param {unknown} user */
function userOf (user) {
  const problem = awarenessUserProblem(user)
  if (problem) throw invalid(problem)
  const { name, color, colorLight } = /** @type {Record<string, unknown>} */ (user)
  return { name, color, colorLight }
}

/**
 * A selection as y-codemirror.next (`cursor`) and y-monaco (`selection`) publish it, or null.
 * @param {unknown} selection @param {string} field
 */
function selectionOf (selection, field) {
  if (selection === null) return null
  if (!isRecord(selection)) throw invalid(`\`${field}\` must be null or { anchor, head }`)
  return { anchor: positionOf(selection.anchor, `${field}.anchor`), head: positionOf(selection.head, `${field}.head`) }
}

/**
 * A `Y.RelativePosition` as JSON (absent fields null), as both editors and Yjs read it.
 * @param {unknown} position @param {string} field
 */
function positionOf (position, field) {
  if (!isRecord(position)) throw invalid(`\`${field}\` must be a Yjs relative position`)
  const type = idOf(position.type, `${field}.type`)
  const item = idOf(position.item, `${field}.item`)
  const tname = position.tname ?? null
  // Any other name would make each peer's Y.Doc create that root type.
  if (tname !== null && tname !== TEXT_NAME) throw invalid(`\`${field}.tname\` must be "${TEXT_NAME}"`)
  if (item === null && tname === null && type === null) throw invalid(`\`${field}\` must name an item, the text or a type`)
  const assoc = position.assoc ?? 0
  if (!Number.isSafeInteger(assoc)) throw invalid(`\`${field}.assoc\` must be an integer`)
  return { type, tname, item, assoc }
}

/** A Yjs ID `{ client, clock }`, or null. @param {unknown} id @param {string} field */
function idOf (id, field) {
  if (id === undefined || id === null) return null
  const { client, clock } = isRecord(id) ? id : {}
  if (!isCount(client) || !isCount(clock)) throw invalid(`\`${field}\` must be { client, clock } of whole numbers`)
  return { client, clock }
}

/** @param {unknown} value @returns {value is number} */
const isCount = value => Number.isSafeInteger(value) && /** @type {number} */ (value) >= 0

/** @param {unknown} value @returns {value is Record<string, unknown>} */
const isRecord = value => typeof value === 'object' && value !== null && !Array.isArray(value)

/** @param {string} message */
const invalid = message => new AppError('INVALID_UPDATE', message)
