import * as Y from 'yjs'
import { TEXT_NAME } from '../../isomorphic/events.js'
import { revisionOf } from '../documents/revision.js'

// `document.changed`, debounced: the first edit of a document starts a window, and when it ends one
// event says where the document then stands. Processes claim the window in the store first, so a
// cluster sends one per document per window; a process refused waits for the claim to end and tries
// again, so the last edits are always reported, unless the revision it finds was announced already.

/** How long an announced revision is remembered, in windows: longer than a refused process waits. */
const ANNOUNCED_KEPT_WINDOWS = 4

export class DocumentChanges {
  /** @type {Map<string, NodeJS.Timeout>} documents edited here whose window is open */
  #pending = new Map()
  #closed = false
  /** @type {Set<Promise<void>>} windows ended and being announced */
  #announcing = new Set()

  /**
   * @param {object} deps @param {number} deps.windowMs
   * @param {(name: string, ms: number) => Promise<number>} deps.claimWindow the outbox's
   * @param {(name: string, value: string, ms: number) => Promise<string | null>} deps.replaceMark the outbox's
   * @param {(docId: string) => import('../documents/live-doc.js').LiveDoc | undefined} deps.copyOf this process's copy, if loaded
   * @param {import('../storage/doc-store.js').DocStore} deps.store read when no copy is loaded
   * @param {(docId: string, state: { revision: string, length: number }) => Promise<void>} deps.announce
   * @param {import('pino').Logger} deps.logger
   */
  constructor ({ windowMs, claimWindow, replaceMark, copyOf, store, announce, logger }) {
    this.windowMs = windowMs
    this.claimWindow = claimWindow
    this.replaceMark = replaceMark
    this.copyOf = copyOf
    this.store = store
    this.announce = announce
    this.logger = logger
  }

  /** An edit of `docId` was applied here. @param {string} docId */
  changed (docId) {
    if (!this.#pending.has(docId)) this.#wait(docId, this.windowMs)
  }

  /** Announces the windows still open at once, without waiting for a claim: the edits are this process's last. */
  async close () {
    this.#closed = true
    const open = [...this.#pending.keys()]
    for (const timer of this.#pending.values()) clearTimeout(timer)
    this.#pending.clear()
    await Promise.all([...open.map(docId => this.#settled(this.#announce(docId), docId)), ...this.#announcing])
  }

  /** @param {string} docId @param {number} ms */
  #wait (docId, ms) {
    if (this.#closed) return
    const timer = setTimeout(() => {
      this.#pending.delete(docId)
      const announcing = this.#settled(this.#due(docId), docId).finally(() => this.#announcing.delete(announcing))
      this.#announcing.add(announcing)
    }, ms)
    timer.unref()
    this.#pending.set(docId, timer)
  }

  /** @param {string} docId */
  async #due (docId) {
    const wait = await this.claimWindow(`changed:${docId}`, this.windowMs)
    if (wait > 0) {
      if (!this.#pending.has(docId)) this.#wait(docId, wait)
      return
    }
    await this.#announce(docId)
  }

  /** A revision another process has announced already is not news. @param {string} docId */
  async #announce (docId) {
    const state = await this.#stateOf(docId)
    if (!state) return
    if (await this.replaceMark(`revision:${docId}`, state.revision, ANNOUNCED_KEPT_WINDOWS * this.windowMs) === state.revision) return
    await this.announce(docId, state)
  }

  /** @param {Promise<void>} announcing @param {string} docId */
  #settled (announcing, docId) {
    return announcing.catch(err => this.logger.warn({ err: err.message, doc: docId }, 'document.changed could not be sent'))
  }

  /** What is stored, with what other processes stored: the copy once written and caught up, else storage. @param {string} docId */
  async #stateOf (docId) {
    const copy = this.copyOf(docId)
    if (copy?.live) {
      await copy.settled()
      await copy.catchUp()
      if (copy.live) return describe(copy.ydoc)
    }
    const { updates } = await this.store.load(docId)
    if (updates.length === 0) return null
    const ydoc = new Y.Doc()
    try {
      Y.transact(ydoc, () => { for (const update of updates) Y.applyUpdate(ydoc, update) })
      return describe(ydoc)
    } finally {
      ydoc.destroy()
    }
  }
}

/** @param {Y.Doc} ydoc */
function describe (ydoc) {
  return { revision: revisionOf(ydoc), length: ydoc.getText(TEXT_NAME).length }
}
