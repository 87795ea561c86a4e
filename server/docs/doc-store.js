// The one interface every document backend implements. Callers serialise `append` and `compact`
// for the same document (LiveDoc's write queue does), so a store needs no per-document locking.

/**
 * @typedef {object} DocStore
 * @property {string} kind what backs it, for /api/health (`leveldb`, `redis`)
 * @property {(docId: string) => Promise<Uint8Array[]>} load the stored snapshot (if any) then the update
 *   log, in order; applying them all rebuilds the document. Rejects if storage fails: never "empty".
 * @property {(docId: string, updates: Uint8Array[]) => Promise<void>} append writes updates as one atomic,
 *   durable write; resolving means they survive a crash of this process.
 * @property {(docId: string, snapshot: Uint8Array) => Promise<void>} compact atomically replaces everything
 *   stored for the document with `snapshot`, which must contain all of it.
 * @property {(docId: string) => Promise<void>} delete
 * @property {() => boolean} isReady
 * @property {() => Promise<void>} close
 */

export {}
