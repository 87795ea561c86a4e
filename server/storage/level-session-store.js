// Sessions in the embedded LevelDB, one JSON value per session id. Ids sort by creation time, so a
// reverse key scan lists newest first and the last id of a page is the cursor of the next.

/** @import { LevelGuard } from './level-guard.js' */
/** @import { SessionRecord } from './session-store.js' */
/** @typedef {import('./session-store.js').SessionStore} SessionStore */

/** @implements {SessionStore} */
export class LevelSessionStore {
  /** @type {Promise<unknown>} increments run one at a time, each reading what the last one wrote */
  #increments = Promise.resolve()

  /** @param {LevelGuard} guard every write goes through it @param {{ syncWrites: boolean }} options */
  constructor (guard, { syncWrites }) {
    this.guard = guard
    /** @type {import('abstract-level').AbstractSublevel<any, any, string, SessionRecord>} */
    this.sessions = guard.sublevel('sessions', { valueEncoding: 'json' })
    // Keyed `<session>!<key>`: ids never contain `!`, so one range holds a session's revocations.
    /** @type {import('abstract-level').AbstractSublevel<any, any, string, number>} */
    this.revoked = guard.sublevel('revoked', { valueEncoding: 'json' })
    /** @type {any} classic-level's own option, absent from abstract-level's types */
    this.writeOptions = { sync: syncWrites }
  }

  /** @param {SessionRecord} record */
  async put (record) {
    await this.guard.write(() => this.sessions.put(record.id, record, this.writeOptions))
  }

  /** @param {string} id */
  async get (id) {
    return this.guard.read(() => this.sessions.get(id))
  }

  /** @param {{ limit: number, cursor?: string }} page */
  async list ({ limit, cursor }) {
    const range = cursor ? { lt: cursor } : {}
    const items = await this.guard.read(() => this.sessions.values({ ...range, reverse: true, limit: limit + 1 }).all())
    const more = items.length > limit
    if (more) items.length = limit
    return { items, nextCursor: more ? items[items.length - 1].id : null }
  }

  /** @param {string} id */
  async delete (id) {
    await this.guard.write(() => this.sessions.del(id, this.writeOptions))
    await this.guard.write(() => this.revoked.clear({ gt: `${id}!`, lt: `${id}"` }))
  }

  /** @param {string} id @param {string} key */
  async revoke (id, key) {
    await this.guard.write(() => this.revoked.put(`${id}!${key}`, 1, this.writeOptions))
  }

  /**
   * One process opens the database, so serializing here makes read and write one step.
   * @param {string} id @param {string} key
   */
  increment (id, key) {
    const stored = `${id}!${key}`
    const next = this.#increments.then(async () => {
      const sum = ((await this.guard.read(() => this.revoked.get(stored))) ?? 0) + 1
      await this.guard.write(() => this.revoked.put(stored, sum, this.writeOptions))
      return sum
    })
    this.#increments = next.catch(() => {})
    return next
  }

  /** @param {string} id @param {string[]} keys */
  async revocations (id, keys) {
    return this.guard.read(() => this.revoked.getMany(keys.map(key => `${id}!${key}`)))
  }
}
