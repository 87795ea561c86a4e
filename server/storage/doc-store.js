// The one interface every document backend implements. Callers run one `append` at a time for the
// same document within a process, and one `compact`, which may run while appends go on (LiveDoc
// does both): a compaction must remove only what its snapshot holds.

/**
 * @typedef {object} StoredDoc
 * @property {Uint8Array[]} updates the snapshot (if any) then the log, in order; applying them all
 *   rebuilds the document
 * @property {string | null} position how far into the log `updates` go; pass it to `readSince`
 */

/**
 * @typedef {object} DocStore
 * @property {string} kind what backs it, for /api/health (`leveldb`, `redis`)
 * @property {boolean} shared whether other processes write the same documents, so a loaded copy
 *   must catch up with `readSince` before it can be called complete
 * @property {(docId: string) => Promise<StoredDoc>} load rejects if storage fails: never "empty"
 * @property {(docId: string, position: string | null) => Promise<StoredDoc>} readSince what was
 *   stored after `position` (or everything, when a snapshot has moved past it)
 * @property {(docId: string, updates: Uint8Array[], known?: string | null) => Promise<{ logLength?: number, span?: { prev: string, last: string } }>} append
 *   writes updates as one atomic, durable write; resolving means they survive a crash of this
 *   process. `logLength`, when the store knows it, is the number of log entries not yet compacted;
 *   `span`, in a shared store, the position before the write and the position of its last entry.
 *   `known`, in a shared store, the newest entry the writer knows the log holds: a log older than
 *   that lost what was acknowledged, and the append is refused (STORE_BEHIND as the cause).
 * @property {(docId: string, makeSnapshot: () => Promise<{ snapshot: Uint8Array, position: string | null }>) => Promise<boolean>} compact
 *   replaces the log up to `position` with `snapshot` (which must contain all of it); false if another
 *   process is compacting the document or already stored a newer snapshot
 * @property {(docId: string) => Promise<void>} delete
 * @property {(docIds: string[]) => Promise<(string | null)[]>} [newestEntries] in a shared store, the
 *   position each document's log has reached (null where the store cannot tell), in one look-up for
 *   all of them: a process reads only the logs that moved past its copies
 */

/** The code of an append a shared store refused because its log is older than what the writer knows it held. */
export const STORE_BEHIND = 'STORE_BEHIND'
