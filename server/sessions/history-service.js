import * as Y from 'yjs'
import { AppError, fromStorage } from '../errors.js'
import { TEXT_NAME } from '../../isomorphic/events.js'
import { compactHistory } from '../documents/history-compaction.js'
import { changeOf, docAt, gone, replayTo, stateOf, stepsBetween, summaryOf } from '../documents/history-replay.js'
import { revisionOf } from '../documents/revision.js'
import { minuteEnd } from '../storage/history-store.js'
/** @import { MinuteSummary } from '../storage/history-store.js' */

/** Steps `/history/updates` returns at most per page. */
export const MAX_UPDATES_PAGE = 5000

/** Checkpoints one session may hold: each keeps a whole document until the session is deleted. */
export const MAX_CHECKPOINTS = 100

/**
 * A session's history as the REST API reads it: the document at a time or a checkpoint, activity per
 * minute, the steps a playback replays, and checkpoints. Times are server clock ms.
 */
export class HistoryService {
  /**
   * @param {object} deps @param {import('../storage/history-store.js').HistoryStore} deps.store
   * @param {import('./session-service.js').SessionService} deps.sessions
   * @param {import('../documents/doc-registry.js').DocRegistry} deps.registry
   * @param {{ historyRetentionMs: number, historyKeystrokesMs: number, historyMaxBytes: number }} deps.config
   * @param {() => number} deps.now
   */
  constructor ({ store, sessions, registry, config, now }) {
    this.store = store
    this.sessions = sessions
    this.registry = registry
    this.config = config
    this.now = now
  }

  get kept () {
    return this.config.historyRetentionMs > 0
  }

  /**
   * The document at `at` (HISTORY_GONE before what history holds), read by `read` before it is destroyed.
   * @template T @param {string} id @param {number} at @param {(ydoc: Y.Doc) => T} read
   */
  async readAt (id, at, read) {
    await this.#retainedFromAfter(id, at)
    const ydoc = await fromStorage(docAt(this.store, id, at))
    try {
      return read(ydoc)
    } finally {
      ydoc.destroy()
    }
  }

  /** The document as checkpoint `name` named it; NOT_FOUND if none has that name. @param {string} id @param {string} name */
  async checkpointState (id, name) {
    await this.sessions.record(id)
    const found = await fromStorage(this.store.checkpoint(id, name))
    if (!found) throw new AppError('NOT_FOUND', `session ${id} has no checkpoint ${JSON.stringify(name)}`)
    return found.state
  }

  /**
   * One bucket per minute with activity in `(from, to]`, the checkpoints, and from when history holds.
   * @param {string} id @param {{ from?: number, to?: number }} range
   */
  async overview (id, { from, to }) {
    const retainedFrom = await this.#retainedFrom(id)
    const end = to ?? this.now()
    const start = Math.max(from ?? retainedFrom, retainedFrom)
    const steps = this.kept ? await fromStorage(stepsBetween(this.store, id, start, end, Infinity)) : []
    /** @type {MinuteSummary[]} */
    const buckets = []
    /** @type {Map<number, import('../storage/history-store.js').HistoryEntry[]>} */
    const byMinute = new Map()
    for (const step of steps) {
      if ('minute' in step) {
        const { update, ...summary } = step.minute
        buckets.push(summary)
        continue
      }
      const minute = byMinute.get(minuteEnd(step.at))
      if (minute) minute.push(step)
      else byMinute.set(minuteEnd(step.at), [step])
    }
    for (const [minuteEndAt, entries] of byMinute) buckets.push(summaryOf(entries, minuteEndAt))
    const checkpoints = await fromStorage(this.store.checkpoints(id))
    return {
      buckets: buckets.map(bucket => ({ ...bucket, start: iso(bucket.start), end: iso(bucket.end) })),
      checkpoints: checkpoints.map(({ name, at, by }) => ({ name, at: iso(at), by })),
      retainedFrom: iso(retainedFrom)
    }
  }

  /**
   * The state at `from`, then each step stored in `(from, to]` in order: an update with its time and
   * author, or where history has folded them, a minute. At most `limit` steps; `next` is the `from`
   * of the next page (null when this one reaches `to`). A page never ends inside one millisecond.
   * @param {string} id @param {{ from: number, to?: number, limit: number }} range
   */
  async updates (id, { from, to, limit }) {
    await this.#retainedFromAfter(id, from)
    const end = Math.min(to ?? this.now(), this.now())
    const { start, steps: before } = await fromStorage(replayTo(this.store, id, from))
    const state = stateOf(start, before)
    let steps = await fromStorage(stepsBetween(this.store, id, from, end, limit + 1))
    let next = null
    if (steps.length > limit) {
      const lastAt = steps[limit - 1].at
      const cut = steps.slice(0, limit).filter(step => step.at < lastAt || steps[limit].at > lastAt)
      // One millisecond holding more than a page: given whole.
      steps = cut.length > 0 ? cut : await fromStorage(stepsBetween(this.store, id, from, lastAt, Infinity))
      next = steps[steps.length - 1].at
    }
    return {
      from: iso(from),
      to: iso(end),
      state: Buffer.from(state).toString('base64'),
      steps: steps.map(step => 'minute' in step
        ? { at: iso(step.at), minute: true, editors: step.minute.editors, added: step.minute.added, removed: step.minute.removed, update: Buffer.from(step.minute.update).toString('base64') }
        : { at: iso(step.at), by: step.by, ...changeOf(step.update), update: Buffer.from(step.update).toString('base64') }),
      next: next === null ? null : iso(next)
    }
  }

  /**
   * Names the document as it is now; BAD_REQUEST if the name is taken or the session holds
   * MAX_CHECKPOINTS already. Kept until the session is deleted.
   * @param {string} id @param {string} name @param {string | null} by
   */
  async addCheckpoint (id, name, by) {
    await this.sessions.record(id)
    if ((await fromStorage(this.store.checkpoints(id))).length >= MAX_CHECKPOINTS) {
      throw new AppError('BAD_REQUEST', `session ${id} holds ${MAX_CHECKPOINTS} checkpoints, the most it may`, [{ field: 'name', message: `at most ${MAX_CHECKPOINTS} checkpoints per session` }])
    }
    const doc = await this.registry.open(id)
    try {
      // Another process may have stored edits this copy has not read yet.
      await fromStorage(doc.catchUp())
      const state = Y.encodeStateAsUpdate(doc.ydoc)
      const checkpoint = { name, at: this.now(), by, revision: revisionOf(doc.ydoc) }
      if (!await fromStorage(this.store.addCheckpoint(id, checkpoint, state))) {
        throw new AppError('BAD_REQUEST', `session ${id} has a checkpoint named ${JSON.stringify(name)} already`, [{ field: 'name', message: 'taken' }])
      }
      return { name, at: iso(checkpoint.at), revision: checkpoint.revision }
    } finally {
      this.registry.release(doc)
    }
  }

  /** The history's compaction of one document (LiveDoc runs it after the document's). @param {string} docId */
  compact = (/** @type {string} */ docId) => compactHistory(this.store, docId, this.now(), {
    retentionMs: this.config.historyRetentionMs,
    keystrokesMs: this.config.historyKeystrokesMs,
    maxBytes: this.config.historyMaxBytes
  })

  /** @param {string} id @param {number} at */
  async #retainedFromAfter (id, at) {
    if (at > this.now()) throw new AppError('BAD_REQUEST', 'that time has not come yet', [{ field: 'at', message: 'in the future' }])
    const retainedFrom = await this.#retainedFrom(id)
    if (!this.kept) throw new AppError('HISTORY_GONE', 'this server keeps no history (HISTORY_RETENTION=0)')
    if (at < retainedFrom) throw gone(retainedFrom)
  }

  /**
   * Where history starts for a document it holds nothing of, though storage holds its edits (made
   * while no history was kept): the document as loaded, just before `at`. Without it, a time before
   * the first kept update would be answered with a text missing what was stored before.
   * @param {string} docId @param {Uint8Array[]} updates what a load read, as it stood at `at` or later
   * @param {number} at the server clock before the load read them
   */
  async startFrom (docId, updates, at) {
    const before = at - 1
    const [base, entries, steps] = await Promise.all([
      this.store.base(docId), this.store.entries(docId, -1, before, 1), this.store.steps(docId, -1, before, 1)
    ])
    if (base || entries.length > 0 || steps.length > 0) return
    await this.store.fold(docId, { base: { at: before, state: Y.mergeUpdates(updates) } })
  }

  /**
   * The base's time once history dropped older ones, or once it started on a document that already
   * had edits; until then, the session's creation (history holds every update since). @param {string} id
   */
  async #retainedFrom (id) {
    const record = await this.sessions.record(id)
    const base = this.kept ? await fromStorage(this.store.base(id)) : null
    return base?.at ?? Date.parse(record.createdAt)
  }
}

/** @param {number} ms */
const iso = ms => new Date(ms).toISOString()

/** @param {Y.Doc} ydoc */
export const textOf = ydoc => ydoc.getText(TEXT_NAME).toString()

/** @param {Y.Doc} ydoc */
export const stateOfDoc = ydoc => Y.encodeStateAsUpdate(ydoc)

/** The text of a state. @param {Uint8Array} state */
export function textOfState (state) {
  const ydoc = new Y.Doc()
  try {
    Y.applyUpdate(ydoc, state)
    return textOf(ydoc)
  } finally {
    ydoc.destroy()
  }
}
