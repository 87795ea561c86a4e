// The one error-code registry: REST responses and socket ACKs refuse with these codes, and the
// error table of docs/API.md is checked against it (test/readme.test.js).

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
  CONFLICT: { status: 409, retry: false, description: 'The document is no longer at the revision the change was made against: read the text again and make the change anew (`details.revision` is the current one).' },
  RATE_LIMITED: { status: 429, retry: true, description: 'A rate or count limit was reached; back off and retry.' },
  INTERNAL: { status: 500, retry: true, description: 'An unexpected server error (details are logged, not sent).' },
  UNAVAILABLE: { status: 503, retry: true, description: 'Storage is unavailable or the document failed to load; retry.' },
  HISTORY_GONE: { status: 410, retry: false, description: 'The time asked for is older than what the session\'s history still holds (`HISTORY_RETENTION`, `HISTORY_MAX_BYTES`, or no history kept); `details.retainedFrom` says from when it holds.' }
})

/** @typedef {keyof typeof ERRORS} ErrorCode */
/** @typedef {{ code: ErrorCode, message: string, details?: unknown }} ErrorBody */
/** @typedef {{ ok: false, error: ErrorBody }} Refusal */
