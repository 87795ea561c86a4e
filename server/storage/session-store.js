// The one interface every session backend implements (level-session-store.js, redis-session-store.js).

/**
 * @typedef {object} SessionRecord
 * @property {string} id
 * @property {string} name
 * @property {string} language
 * @property {number} maxEditors
 * @property {string} createdAt ISO time
 * @property {string} updatedAt ISO time
 */

/**
 * @typedef {object} SessionStore
 * @property {(record: SessionRecord) => Promise<void>} put
 * @property {(id: string) => Promise<SessionRecord | undefined>} get
 * @property {(page: { limit: number, cursor?: string }) => Promise<{ items: SessionRecord[], nextCursor: string | null }>} list
 * @property {(id: string) => Promise<void>} delete removes the session and its revocations
 * @property {(id: string, key: string) => Promise<void>} revoke records that `key` (a token) is revoked
 * @property {(id: string, key: string) => Promise<number>} increment adds 1 to the number recorded
 *   for `key` (a user's revocation generation; 0 while none) and returns the sum, atomically: of two
 *   increments at once, neither is lost
 * @property {(id: string, keys: string[]) => Promise<(number | undefined)[]>} revocations the numbers
 *   recorded for `keys`, undefined where none
 */

export {}
