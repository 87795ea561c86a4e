import * as Y from 'yjs'
import { TEXT_NAME } from '../../isomorphic/events.js'

/**
 * A document store held in memory, for the unit tests of the classes above storage: every call can
 * be held at its await or made to fail, so a test can interleave them as a slow or failing disk or
 * Redis would. It keeps the contract of storage/doc-store.js: an append either stores all of its
 * updates or none, and a compaction replaces only the entries its snapshot was asked for after.
 */
export class MemoryStore {
  kind = 'memory'
  shared = false
  /** @type {Map<string, { snapshot: Uint8Array | null, log: Uint8Array[] }>} */
  docs = new Map()
  /** @type {Record<string, { hold?: Promise<void>, fail?: Error }[]>} what the next calls of each kind do */
  next = { append: [], compact: [], load: [] }
  calls = { append: 0, compact: 0, load: 0 }

  /** @param {string} docId */
  #doc (docId) {
    let doc = this.docs.get(docId)
    if (!doc) {
      doc = { snapshot: null, log: [] }
      this.docs.set(docId, doc)
    }
    return doc
  }

  /** @param {'append' | 'compact' | 'load'} kind */
  async #step (kind) {
    this.calls[kind]++
    const step = this.next[kind].shift()
    if (step?.hold) await step.hold
    if (step?.fail) throw step.fail
  }

  /**
   * The next call of `kind` waits until `release` is called, and then fails if given an error.
   * @param {'append' | 'compact' | 'load'} kind
   * @param {Error} [fail]
   */
  hold (kind, fail) {
    /** @type {() => void} */
    let release = () => {}
    const hold = new Promise(resolve => { release = () => resolve(undefined) })
    this.next[kind].push({ hold, fail })
    return release
  }

  /** @param {'append' | 'compact' | 'load'} kind @param {Error} err */
  fail (kind, err) {
    this.next[kind].push({ fail: err })
  }

  /** @param {string} docId */
  async load (docId) {
    await this.#step('load')
    const { snapshot, log } = this.#doc(docId)
    return { updates: snapshot ? [snapshot, ...log] : [...log], position: null }
  }

  /** @param {string} docId */
  async readSince (docId) {
    return this.load(docId)
  }

  /** @param {string} docId @param {Uint8Array[]} updates */
  async append (docId, updates) {
    await this.#step('append')
    const doc = this.#doc(docId)
    doc.log.push(...updates)
    return { logLength: doc.log.length + (doc.snapshot ? 1 : 0) }
  }

  /**
   * @param {string} docId
   * @param {() => Promise<{ snapshot: Uint8Array, position: string | null }>} makeSnapshot
   */
  async compact (docId, makeSnapshot) {
    const covered = this.#doc(docId).log.length
    await this.#step('compact')
    const { snapshot } = await makeSnapshot()
    const doc = this.#doc(docId)
    doc.snapshot = snapshot
    doc.log.splice(0, covered)
    return true
  }

  /** @param {string} docId */
  async delete (docId) {
    this.docs.delete(docId)
  }

  /** The text a process loading `docId` now would read. @param {string} docId */
  textOf (docId) {
    const { snapshot, log } = this.#doc(docId)
    const ydoc = new Y.Doc()
    for (const update of snapshot ? [snapshot, ...log] : log) Y.applyUpdate(ydoc, update)
    const text = ydoc.getText(TEXT_NAME).toString()
    ydoc.destroy()
    return text
  }
}
