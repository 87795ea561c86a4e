// One hash of JSON records and a sorted set of ids (score 0: sorted by id, so by creation time),
// under one hash tag so a create or delete stays one atomic MULTI on a Redis Cluster.

import { execMulti } from './redis.js'

const RECORDS = 'tandem:{sessions}:records'
const ORDER = 'tandem:{sessions}:order'
/** @param {string} id */
const revokedKey = id => `tandem:{sessions}:revoked:${id}`

/** @import { SessionRecord } from './session-store.js' */
/** @typedef {import('./session-store.js').SessionStore} SessionStore */

/** @implements {SessionStore} */
export class RedisSessionStore {
  /** @param {import('./redis.js').RedisClient} client */
  constructor (client) {
    this.client = client
  }

  /** @param {SessionRecord} record */
  async put (record) {
    await execMulti(this.client.multi().hset(RECORDS, record.id, JSON.stringify(record)).zadd(ORDER, 0, record.id))
  }

  /** @param {string} id */
  async get (id) {
    const json = await this.client.hget(RECORDS, id)
    return json ? /** @type {SessionRecord} */ (JSON.parse(json)) : undefined
  }

  /** @param {{ limit: number, cursor?: string }} page */
  async list ({ limit, cursor }) {
    const ids = await this.client.zrange(ORDER, cursor ? `(${cursor}` : '+', '-', 'BYLEX', 'REV', 'LIMIT', 0, limit + 1)
    const more = ids.length > limit
    if (more) ids.length = limit
    const records = ids.length > 0 ? await this.client.hmget(RECORDS, ...ids) : []
    const items = records.filter(json => json !== null).map(json => /** @type {SessionRecord} */ (JSON.parse(json)))
    return { items, nextCursor: more ? ids[ids.length - 1] : null }
  }

  /** @param {string} id */
  async delete (id) {
    await execMulti(this.client.multi().hdel(RECORDS, id).zrem(ORDER, id).del(revokedKey(id)))
  }

  /** @param {string} id @param {string} key */
  async revoke (id, key) {
    await this.client.hset(revokedKey(id), key, '1')
  }

  /** @param {string} id @param {string} key */
  async increment (id, key) {
    return this.client.hincrby(revokedKey(id), key, 1)
  }

  /** @param {string} id @param {string[]} keys */
  async revocations (id, keys) {
    const values = await this.client.hmget(revokedKey(id), ...keys)
    return values.map(value => (value === null ? undefined : Number(value)))
  }
}
