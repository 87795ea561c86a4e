// The wire contract shared by server/, client/ and loadtest/: event names, error codes, ACK shapes,
// limits and the Socket.IO parser both ends must use (`tandem/protocol`). Browser bundles import this
// file, so it must stay free of Node-only imports.
export { Decoder, Encoder, PARSER } from './parser.js'

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

/** Session and document ids: what the server mints, and all it accepts. */
export const DOC_ID_PATTERN = /^[a-z0-9]{1,64}$/

export const ROLES = Object.freeze({ EDITOR: 'editor', VIEWER: 'viewer' })

/**
 * `reason` of `doc:closed`. DELETED and REVOKED (the token the document was joined with was revoked)
 * are final. EXPIRED means the token the document was joined with has expired: join again with a
 * fresh one. RELOAD means the server dropped its in-memory copy (after refusing an update it could
 * not apply): join again at once, as after a reconnect.
 */
export const CLOSE_REASONS = Object.freeze({ DELETED: 'deleted', REVOKED: 'revoked', EXPIRED: 'expired', RELOAD: 'reload' })

/**
 * What an awareness state's `user` field may hold. Editors draw remote cursors with `color` and
 * `colorLight` inside a style attribute (y-codemirror.next) and show `name` as text, so a colour is
 * a hex colour and nothing else (`#rrggbb`, or the short `#rgb`), and a name is short and free of
 * control and bidi-override characters. `colorLight` may add alpha (`#rrggbbaa`, `#rgba`).
 */
export const AWARENESS_USER = Object.freeze({
  COLOR_PATTERN: /^#(?:[0-9a-fA-F]{3}){1,2}$/,
  COLOR_LIGHT_PATTERN: /^#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/,
  MAX_NAME_LENGTH: 64,
  FORBIDDEN_NAME_CHARACTERS: /[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069]/u
})

/**
 * Why an awareness `user` field is refused, or null if it is acceptable. Fields other than `name`,
 * `color` and `colorLight` are left alone.
 * @param {unknown} user
 * @returns {string | null}
 */
export function awarenessUserProblem (user) {
  if (user === null || typeof user !== 'object' || Array.isArray(user)) return '`user` must be an object'
  const { name, color, colorLight } = /** @type {Record<string, unknown>} */ (user)
  if (name !== undefined) {
    if (typeof name !== 'string') return '`user.name` must be a string'
    if (name.length > AWARENESS_USER.MAX_NAME_LENGTH) return `\`user.name\` must be at most ${AWARENESS_USER.MAX_NAME_LENGTH} characters`
    if (AWARENESS_USER.FORBIDDEN_NAME_CHARACTERS.test(name)) return '`user.name` must not hold control characters'
  }
  if (color !== undefined && (typeof color !== 'string' || !AWARENESS_USER.COLOR_PATTERN.test(color))) {
    return '`user.color` must be a #rrggbb (or #rgb) colour'
  }
  if (colorLight !== undefined && (typeof colorLight !== 'string' || !AWARENESS_USER.COLOR_LIGHT_PATTERN.test(colorLight))) {
    return '`user.colorLight` must be a hex colour: #rrggbb, #rrggbbaa, #rgb or #rgba'
  }
  return null
}

/**
 * Every refusal, REST or socket, carries one of these codes. `status` is the HTTP status it maps to;
 * `retry` says whether a client should keep the refused update and try again later.
 */
export const ERRORS = Object.freeze({
  BAD_REQUEST: { status: 400, retry: false, description: 'The request or event payload is malformed.' },
  UNAUTHORIZED: { status: 401, retry: false, description: 'Missing, expired or invalid credentials.' },
  FORBIDDEN: { status: 403, retry: false, description: 'The credentials do not allow this action.' },
  NOT_FOUND: { status: 404, retry: false, description: 'No such session or document.' },
  NOT_JOINED: { status: 409, retry: false, description: 'The socket has not joined this document.' },
  ROOM_FULL: { status: 409, retry: true, description: 'The session already has `maxEditors` editors.' },
  TOO_LARGE: { status: 413, retry: true, description: 'The body, update or document exceeds its size limit; a refused update is kept and retried after backing off (the limit may be raised, or the document compacted).' },
  INVALID_UPDATE: { status: 422, retry: false, description: 'The bytes are not a valid Yjs (or awareness) update.' },
  OUT_OF_SYNC: { status: 409, retry: true, description: 'The update builds on changes the server does not have: join again, then send the difference.' },
  RATE_LIMITED: { status: 429, retry: true, description: 'A rate or count limit was reached; back off and retry.' },
  INTERNAL: { status: 500, retry: true, description: 'An unexpected server error (details are logged, not sent).' },
  UNAVAILABLE: { status: 503, retry: true, description: 'Storage is unavailable or the document failed to load; retry.' }
})

/** @typedef {keyof typeof ERRORS} ErrorCode */
/** @typedef {{ code: ErrorCode, message: string, details?: unknown }} ErrorBody */
/** @typedef {{ ok: false, error: ErrorBody }} Refusal */

/**
 * @typedef {{
 *   'doc:join': (payload: { doc: string, sv?: Uint8Array }, ack: (reply: JoinReply | Refusal) => void) => void,
 *   'doc:leave': (payload: { doc: string }, ack: (reply: { ok: true } | Refusal) => void) => void,
 *   'doc:update': (payload: { doc: string, update: Uint8Array }, ack: (reply: { ok: true } | Refusal) => void) => void,
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
