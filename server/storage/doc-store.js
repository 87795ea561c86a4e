// The one interface every document backend implements. Callers run one `append` at a time per
// document, and a `compact` may run beside appends: it must remove only what its snapshot holds.

/**
 * @typedef {object} StoredDoc
 * @property {Uint8Array[]} updates the snapshot (if any) then the log, in order
 * @property {string | null} position how far into the log `updates` go; pass it to `readSince`
 */

/**
 * @typedef {object} DocStore
 * @property {string} kind what backs it, for /api/health (`leveldb`, `redis`)
 * @property {boolean} shared whether other processes write the same documents (a copy must then catch up)
 * @property {(docId: string) => Promise<StoredDoc>} load rejects if storage fails: never "empty"
 * @property {(docId: string, position: string | null) => Promise<StoredDoc>} readSince what was stored after `position`
 * @property {(docId: string, updates: Uint8Array[], known?: string | null, history?: import('./update-log.js').UpdatesHistory) => Promise<{ logLength?: number, span?: { prev: string, last: string } }>} append
 *   one atomic, durable write: resolved, the updates survive a crash. `logLength`: log entries not
 *   compacted yet, if known; `span`: the positions before and at the end of the write (shared store).
 *   `known`: the newest entry the writer knows; a log older than that is refused (STORE_BEHIND).
 *   `history`: the updates are kept in history too, in the same write (history-store.js)
 * @property {(docId: string, makeSnapshot: () => Promise<{ snapshot: Uint8Array, position: string | null }>) => Promise<boolean>} compact
 *   replaces the log up to `position` with `snapshot`; false if another process is compacting or did
 * @property {(docId: string) => Promise<void>} delete
 * @property {(docIds: string[]) => Promise<(string | null)[]>} [newestEntries] the position each log has
 *   reached, in one look-up (shared store), so a process reads only the logs that moved
 */

/** The cause of an append refused because the shared log is older than the writer knows it was. */
export const STORE_BEHIND = 'STORE_BEHIND'
