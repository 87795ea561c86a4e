// Sessions in the embedded LevelDB, one JSON value per session id. Ids sort by creation time, so a
// reverse key scan lists newest first and the last id of a page is the cursor of the next.

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
 * @property {(id: string) => Promise<void>} delete
 */

/** @implements {SessionStore} */
export class LevelSessionStore {
  /** @param {import('classic-level').ClassicLevel<string, Uint8Array>} db @param {{ syncWrites: boolean }} options */
  constructor (db, { syncWrites }) {
    /** @type {import('abstract-level').AbstractSublevel<any, any, string, SessionRecord>} */
    this.sessions = db.sublevel('sessions', { keyEncoding: 'utf8', valueEncoding: 'json' })
    /** @type {any} classic-level's own option, absent from abstract-level's types */
    this.writeOptions = { sync: syncWrites }
  }

  /** @param {SessionRecord} record */
  async put (record) {
    await this.sessions.put(record.id, record, this.writeOptions)
  }

  /** @param {string} id */
  async get (id) {
    return this.sessions.get(id)
  }

  /** @param {{ limit: number, cursor?: string }} page */
  async list ({ limit, cursor }) {
    const range = cursor ? { lt: cursor } : {}
    const items = await this.sessions.values({ ...range, reverse: true, limit: limit + 1 }).all()
    const more = items.length > limit
    if (more) items.length = limit
    return { items, nextCursor: more ? items[items.length - 1].id : null }
  }

  /** @param {string} id */
  async delete (id) {
    await this.sessions.del(id, this.writeOptions)
  }
}
