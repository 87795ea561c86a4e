import { randomBytes } from 'node:crypto'
import * as Y from 'yjs'
import { AppError, fromStorage } from '../errors.js'
import { TEXT_NAME } from '../../isomorphic/events.js'
import { WEBHOOK_EVENTS } from '../webhooks/events.js'
import { languageOf } from './language-of.js'

/** Sessions for the REST API: one session, one document with the same id; `editors` is live. */
export class SessionService {
  /**
   * @param {object} deps @param {import('../storage/session-store.js').SessionStore} deps.store
   * @param {import('../storage/doc-store.js').DocStore} deps.docStore
   * @param {import('../documents/doc-registry.js').DocRegistry} deps.registry
   * @param {import('../realtime/cluster.js').Cluster} deps.cluster
   * @param {{ defaultMaxEditors: number, webhookSecret: string, historyRetentionMs: number }} deps.config
   * @param {Pick<import('../webhooks/webhooks.js').Webhooks, 'emit'>} deps.webhooks
   */
  constructor ({ store, docStore, registry, cluster, config, webhooks }) {
    this.store = store
    this.docStore = docStore
    this.registry = registry
    this.cluster = cluster
    this.config = config
    this.webhooks = webhooks
  }

  /** @param {{ name: string, language?: string, maxEditors?: number, content?: string, webhookUrl?: string | null }} input */
  async create ({ name, language, maxEditors, content, webhookUrl }) {
    this.#checkWebhook(webhookUrl)
    const id = newSessionId()
    if (content) {
      // The document is stored before the session exists, so nobody can join it half-seeded.
      const ydoc = new Y.Doc()
      ydoc.getText(TEXT_NAME).insert(0, content)
      const history = this.config.historyRetentionMs > 0 ? { at: Date.now(), by: [null] } : undefined
      await fromStorage(this.docStore.append(id, [Y.encodeStateAsUpdate(ydoc)], null, history))
      ydoc.destroy()
    }
    const now = new Date().toISOString()
    const record = {
      id,
      name,
      language: language ?? languageOf(name),
      maxEditors: maxEditors ?? this.config.defaultMaxEditors,
      createdAt: now,
      updatedAt: now,
      ...(webhookUrl ? { webhookUrl } : {})
    }
    await fromStorage(this.store.put(record))
    await this.webhooks.emit(WEBHOOK_EVENTS.SESSION_CREATED, record, { name: record.name, language: record.language, maxEditors: record.maxEditors })
    return present(record, 0)
  }

  /** @param {string} id */
  async record (id) {
    const record = await fromStorage(this.store.get(id))
    if (!record) throw new AppError('NOT_FOUND', `no session ${id}`)
    return record
  }

  /** @param {string} id */
  async get (id) {
    const [session] = await this.#withEditors([await this.record(id)])
    return session
  }

  /** @param {{ limit: number, cursor?: string }} page */
  async list (page) {
    const { items, nextCursor } = await fromStorage(this.store.list(page))
    return { sessions: await this.#withEditors(items), nextCursor }
  }

  /** @param {string} id @param {{ name?: string, language?: string, maxEditors?: number, webhookUrl?: string | null }} changes */
  async update (id, { webhookUrl, ...changes }) {
    this.#checkWebhook(webhookUrl)
    const record = { ...await this.record(id), ...changes, updatedAt: new Date().toISOString() }
    if (webhookUrl) record.webhookUrl = webhookUrl
    else if (webhookUrl === null) delete record.webhookUrl
    await fromStorage(this.store.put(record))
    const [session] = await this.#withEditors([record])
    return session
  }

  /**
   * The record goes last: a deletion that fails halfway answers 503 and can be retried until whole.
   * @param {string} id
   */
  async delete (id) {
    const record = await this.record(id)
    this.cluster.sessionDeleted(id)
    await fromStorage(this.registry.destroy(id))
    await fromStorage(this.store.delete(id))
    await this.webhooks.emit(WEBHOOK_EVENTS.SESSION_DELETED, record, {})
  }

  /** A URL nothing could sign for is refused before anything changes. @param {string | null | undefined} webhookUrl */
  #checkWebhook (webhookUrl) {
    if (webhookUrl && !this.config.webhookSecret) {
      throw new AppError('BAD_REQUEST', 'invalid request', [{ field: 'webhookUrl', message: 'this server has no WEBHOOK_SECRET to sign webhooks with' }])
    }
  }

  /** @param {import('../storage/session-store.js').SessionRecord[]} records */
  async #withEditors (records) {
    const counts = await this.cluster.editorCounts(records.map(record => record.id))
    return records.map((record, i) => present(record, counts[i]))
  }
}

/** @param {import('../storage/session-store.js').SessionRecord} record @param {number} editors */
function present ({ id, name, language, maxEditors, createdAt, updatedAt, webhookUrl }, editors) {
  // The URL itself may hold the receiver's token, and join-token holders read sessions too.
  return { id, name, language, maxEditors, editors, createdAt, updatedAt, webhook: webhookUrl !== undefined }
}

/** Time-ordered ids (creation time in base 36, then 64 random bits): listing by key lists by age. */
function newSessionId () {
  const time = Date.now().toString(36).padStart(9, '0')
  const random = randomBytes(8).readBigUInt64BE().toString(36).padStart(13, '0')
  return time + random
}
