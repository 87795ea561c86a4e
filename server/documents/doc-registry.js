import { AppError } from '../errors.js'
import { CompactionQueue } from './compaction-queue.js'
import { LiveDoc } from './live-doc.js'

/** Far longer than any load or join: a load begun before a deletion must not bring the document back. */
const DELETED_KEPT_MS = 60 * 60 * 1000

/**
 * The documents this process holds: loaded once however many joins race, unloaded after `docIdleMs`
 * without editors. A failed load is never cached nor replaced by an empty document, so what is
 * stored stays intact for the next attempt.
 */
export class DocRegistry {
  /** @type {Map<string, LiveDoc>} */
  #docs = new Map()
  /** @type {Map<string, Promise<LiveDoc>>} */
  #loading = new Map()
  /** @type {Map<string, Promise<void>>} */
  #unloading = new Map()
  /** @type {Map<string, number>} ids deleted in the last DELETED_KEPT_MS, and when */
  #deleted = new Map()

  /**
   * @param {object} deps @param {import('../storage/doc-store.js').DocStore} deps.store
   * @param {{ docIdleMs: number, compactAfterUpdates: number, maxDocBytes: number, maxDocStructs: number }} deps.config
   * @param {import('pino').Logger} deps.logger @param {import('../metrics.js').Metrics} deps.metrics
   * @param {import('../storage/redis-doc-feed.js').RedisDocFeed} [deps.feed] a loaded document subscribes to it
   * @param {(docId: string, registry: DocRegistry) => void} [deps.onInvalid] before a distrusted copy is dropped: its editors must rejoin
   * @param {(doc: LiveDoc, update: Uint8Array) => void} [deps.onRemoteUpdate] what another process stored that a copy lacked
   * @param {(doc: LiveDoc, applied: import('./live-doc.js').TakenUpdate[]) => void} [deps.onApplied] the updates taken here, once applied
   * @param {import('./live-doc.js').DocHistory | null} [deps.history] absent: no history is kept
   */
  constructor ({ store, config, logger, metrics, feed, onInvalid = () => {}, onRemoteUpdate = () => {}, onApplied = () => {}, history = null }) {
    this.store = store
    this.feed = feed
    this.onInvalid = onInvalid
    this.onRemoteUpdate = onRemoteUpdate
    this.onApplied = onApplied
    this.history = history
    this.config = config
    this.logger = logger
    this.metrics = metrics
    this.compactions = new CompactionQueue()
  }

  /** @param {string} id */
  get (id) {
    return this.#docs.get(id)
  }

  /** @param {string} id */
  editorCount (id) {
    return this.#docs.get(id)?.sockets.size ?? 0
  }

  /** The documents loaded here. */
  loaded () {
    return this.#docs.values()
  }

  get size () {
    return this.#docs.size
  }

  /** Editors joined to documents loaded here. */
  editorTotal () {
    let total = 0
    for (const doc of this.#docs.values()) total += doc.sockets.size
    return total
  }

  /** Loads the document if needed. Callers that attach no socket must `release` it. @param {string} id */
  async open (id) {
    if (this.#deleted.has(id)) throw new AppError('NOT_FOUND', `session ${id} was deleted`)
    const loaded = this.#docs.get(id)
    if (loaded) {
      clearTimeout(loaded.idleTimer)
      return loaded
    }
    let loading = this.#loading.get(id)
    if (!loading) {
      loading = this.#load(id).finally(() => this.#loading.delete(id))
      this.#loading.set(id, loading)
    }
    return loading
  }

  /** Starts the idle countdown once a document has no editors left. @param {LiveDoc} doc */
  release (doc) {
    if (doc.sockets.size > 0 || this.#docs.get(doc.id) !== doc) return
    clearTimeout(doc.idleTimer)
    doc.idleTimer = setTimeout(() => {
      this.unload(doc.id).catch(err => this.logger.error({ err, doc: doc.id }, 'unload failed'))
    }, this.config.docIdleMs).unref()
  }

  /** Compacts a document's log and drops it from memory. @param {string} id */
  async unload (id) {
    const doc = this.#docs.get(id)
    if (!doc || doc.sockets.size > 0) return
    await this.#drop(doc, { compact: true })
  }

  /** Drops a document without compacting; what it took is still written. @param {string} id */
  async evict (id) {
    const doc = this.#docs.get(id)
    if (doc) await this.#drop(doc, { compact: false })
  }

  /** Drops a distrusted copy (never one loaded after it) and tells its editors to rejoin. @param {LiveDoc} doc */
  async invalidate (doc) {
    if (this.#docs.get(doc.id) !== doc) return
    this.onInvalid(doc.id, this)
    await this.#drop(doc, { compact: false })
  }

  /** Forgets a deleted document and deletes it from storage; detach its editors first. @param {string} id */
  async destroy (id) {
    await this.discard(id)
    await this.store.delete(id)
  }

  /** Forgets a document another process deleted, without touching storage. @param {string} id */
  async discard (id) {
    this.#deleted.set(id, Date.now())
    // Oldest first: a Map keeps insertion order.
    for (const [deletedId, at] of this.#deleted) {
      if (Date.now() - at < DELETED_KEPT_MS) break
      this.#deleted.delete(deletedId)
    }
    const doc = this.#docs.get(id) ?? await this.#loading.get(id)?.catch(() => undefined)
    if (doc) await this.#drop(doc, { compact: false })
    await this.#unloading.get(id)
  }

  /** Compacts and unloads every document (shutdown); editors must be gone. */
  async closeAll () {
    await Promise.allSettled([...this.#loading.values()])
    await Promise.all([...this.#docs.keys()].map(id => this.unload(id)))
    await Promise.all([...this.#unloading.values()])
  }

  /** @param {string} id */
  async #load (id) {
    await this.#unloading.get(id)
    const started = performance.now()
    const doc = new LiveDoc(id, {
      store: this.store,
      history: this.history,
      onRemoteUpdate: this.onRemoteUpdate,
      onApplied: this.onApplied,
      onUntrusted: (distrusted) => {
        this.invalidate(distrusted).catch(err => this.logger.error({ err, doc: id }, 'dropping a distrusted document failed'))
      },
      compactAfterUpdates: this.config.compactAfterUpdates,
      compactions: this.compactions,
      maxDocBytes: this.config.maxDocBytes,
      maxDocStructs: this.config.maxDocStructs,
      logger: this.logger.child({ doc: id }),
      metrics: this.metrics
    })
    let storedUpdates
    try {
      // Subscribed before the read: a write stored after it arrives as a message.
      await this.feed?.subscribe(id)
      storedUpdates = await doc.load()
    } catch (err) {
      this.feed?.unsubscribe(id)
      if (err instanceof AppError && err.code === 'TOO_LARGE') {
        this.logger.error({ err: err.message, doc: id }, 'document refused on load')
        throw err
      }
      // A store that is known to be down says so itself, once per interval (storage-health.js).
      if (err instanceof AppError && err.code === 'UNAVAILABLE') this.logger.debug({ err: err.message, doc: id }, 'document failed to load')
      else this.logger.error({ err, doc: id }, 'document failed to load')
      throw new AppError('UNAVAILABLE', 'document could not be loaded; retry later')
    }
    if (this.#deleted.has(id)) {
      await doc.close({ compact: false })
      this.feed?.unsubscribe(id)
      throw new AppError('NOT_FOUND', `session ${id} was deleted`)
    }
    this.#docs.set(id, doc)
    this.metrics.docLoadDuration.observe((performance.now() - started) / 1000)
    if (storedUpdates >= this.config.compactAfterUpdates) {
      doc.compact().catch(err => this.logger.warn({ err, doc: id }, 'compaction after load failed'))
    }
    return doc
  }

  /**
   * A load of the same id waits until the close ends; a failed close is logged, and the next load
   * reads what is stored. @param {LiveDoc} doc @param {{ compact: boolean }} options
   */
  async #drop (doc, options) {
    this.#forget(doc)
    const dropping = doc.close(options)
      .catch(err => this.logger.warn({ err, doc: doc.id }, 'closing a document failed'))
      .finally(() => this.#unloading.delete(doc.id))
    this.#unloading.set(doc.id, dropping)
    await dropping
  }

  /** @param {LiveDoc} doc */
  #forget (doc) {
    clearTimeout(doc.idleTimer)
    this.#docs.delete(doc.id)
    this.feed?.unsubscribe(doc.id)
  }
}
