// The one interface every session backend implements (level-session-store.js, redis-session-store.js).

/**
 * @typedef {object} SessionRecord
 * @property {string} id
 * @property {string} name
 * @property {string} language
 * @property {number} maxEditors
 * @property {string} createdAt ISO time
 * @property {string} updatedAt ISO time
 * @property {string} [webhookUrl] where this session's webhooks go too
 */

/**
 * @typedef {object} SessionStore
 * @property {(record: SessionRecord) => Promise<void>} put
 * @property {(id: string) => Promise<SessionRecord | undefined>} get
 * @property {(page: { limit: number, cursor?: string }) => Promise<{ items: SessionRecord[], nextCursor: string | null }>} list
 * @property {(id: string) => Promise<void>} delete removes the session and its revocations
 * @property {(id: string, key: string) => Promise<void>} revoke records that `key` (a token) is revoked
 * @property {(id: string, key: string) => Promise<number>} increment atomically adds 1 to `key`'s number (a user's revocation generation) and returns it
 * @property {(id: string, keys: string[]) => Promise<(number | undefined)[]>} revocations the numbers recorded for `keys`
 */

export {}
