// The Socket.IO events of Tandem's protocol and what their payloads carry (docs/PROTOCOL.md).

/** Socket.IO event names, `domain:verb`. */
export const EVENTS = Object.freeze({
  JOIN: 'doc:join',
  LEAVE: 'doc:leave',
  UPDATE: 'doc:update',
  AWARENESS: 'doc:awareness',
  CLOSED: 'doc:closed'
})

/** The Y.Text that holds the editor's text in every document. */
export const TEXT_NAME = 'content'

export const ROLES = Object.freeze({ EDITOR: 'editor', VIEWER: 'viewer' })

/**
 * `reason` of `doc:closed`. DELETED and REVOKED (the token the document was joined with was revoked)
 * are final. EXPIRED means the token the document was joined with has expired: join again with a
 * fresh one. RELOAD means the server dropped its in-memory copy (after refusing an update it could
 * not apply): join again at once, as after a reconnect.
 */
export const CLOSE_REASONS = Object.freeze({ DELETED: 'deleted', REVOKED: 'revoked', EXPIRED: 'expired', RELOAD: 'reload' })

/**
 * @typedef {{
 *   'doc:join': (payload: { doc: string, sv?: Uint8Array }, ack: (reply: JoinReply | import('./error-codes.js').Refusal) => void) => void,
 *   'doc:leave': (payload: { doc: string }, ack: (reply: { ok: true } | import('./error-codes.js').Refusal) => void) => void,
 *   'doc:update': (payload: { doc: string, update: Uint8Array }, ack: (reply: { ok: true } | import('./error-codes.js').Refusal) => void) => void,
 *   'doc:awareness': (payload: { doc: string, update: Uint8Array }) => void
 * }} ClientToServerEvents
 */

/**
 * @typedef {{
 *   'doc:update': (payload: { doc: string, update: Uint8Array }) => void,
 *   'doc:awareness': (payload: { doc: string, update: Uint8Array }) => void,
 *   'doc:closed': (payload: { doc: string, reason: string }) => void
 * }} ServerToClientEvents
 */

/**
 * @typedef {object} JoinReply
 * @property {true} ok
 * @property {Uint8Array} update what the client lacks
 * @property {Uint8Array} sv the server's state vector
 * @property {Uint8Array} awareness the live awareness states of the document's other editors
 * @property {string} role
 * @property {number} editors live editors of the document, this one included
 * @property {number} maxUpdateBytes the largest update the server accepts: a client merging pending
 *   updates keeps each message under it
 */
