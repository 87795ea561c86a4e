import { KINDS } from './redis-keys.js'

// The Redis footprint bench's figures, each derived from what Redis answered (bench/redis-keys.js),
// and their tables. Per document is a stage's bytes less the baseline's (read before the documents
// were created), over the documents: of the session hash and sorted set, which all sessions share,
// each document is counted its share.

/** @typedef {import('./redis-keys.js').KeyUsage} KeyUsage */
/** @typedef {Awaited<ReturnType<typeof import('./redis-keys.js').readMemory>>} Memory */
/** @typedef {{ memory: Memory, keys: KeyUsage[] }} Reading what Redis held at one moment */

const DAY_MS = 24 * 3600 * 1000

/** @param {KeyUsage[]} keys */
const bytesOf = keys => keys.reduce((total, key) => total + key.bytes, 0)

/**
 * A stage's keys by kind, totals, and what it adds per document over the baseline.
 * @param {Reading} reading @param {Reading} baseline @param {number} documents
 */
export function stageOf ({ memory, keys }, baseline, documents) {
  const bytes = bytesOf(keys)
  const kinds = KINDS.flatMap(({ kind, what }) => {
    const here = keys.filter(key => key.kind === kind)
    const before = baseline.keys.filter(key => key.kind === kind)
    if (here.length === 0 && before.length === 0) return []
    const expiring = here.filter(key => key.ttlMs >= 0).map(key => key.ttlMs)
    return [{
      kind,
      what,
      keys: here.length,
      /** keys of this kind beyond the baseline's */
      added: here.length - before.length,
      /** each type, with its encoding where it differs: `hash (hashtable)` */
      types: [...new Set(here.map(key => key.encoding === key.type ? key.type : `${key.type} (${key.encoding})`))].sort(),
      bytes: bytesOf(here),
      perDocumentBytes: (bytesOf(here) - bytesOf(before)) / documents,
      /** keys that never expire, and the shortest and longest TTL of those that do */
      ttl: { never: here.length - expiring.length, minMs: expiring.length ? Math.min(...expiring) : null, maxMs: expiring.length ? Math.max(...expiring) : null }
    }]
  })
  return {
    ...memory,
    keys: keys.length,
    /** keys beyond the baseline's */
    added: keys.length - baseline.keys.length,
    bytes,
    perDocument: {
      bytes: (bytes - bytesOf(baseline.keys)) / documents,
      usedMemory: (memory.usedMemory - baseline.memory.usedMemory) / documents,
      usedMemoryDataset: (memory.usedMemoryDataset - baseline.memory.usedMemoryDataset) / documents
    },
    kinds
  }
}

/**
 * What the documents' logs and snapshots hold, summarized.
 * @param {Awaited<ReturnType<typeof import('./redis-keys.js').readDocuments>>} documents
 */
export function contentsOf ({ logEntries, snapshotBytes, snapshotFields }) {
  /** @type {Record<string, number>} */
  const fields = {}
  for (const names of snapshotFields) for (const name of names) fields[name] = (fields[name] ?? 0) + 1
  return {
    logs: logEntries.length,
    logEntries: { total: logEntries.reduce((a, b) => a + b, 0), max: Math.max(0, ...logEntries), logsWithEntries: logEntries.filter(n => n > 0).length },
    snapshots: snapshotBytes.length,
    snapshotBytes: snapshotBytes.length === 0
      ? { mean: 0, min: 0, max: 0 }
      : { mean: snapshotBytes.reduce((a, b) => a + b, 0) / snapshotBytes.length, min: Math.min(...snapshotBytes), max: Math.max(...snapshotBytes) },
    /** snapshot hashes holding each field */
    snapshotFields: fields
  }
}

/** @typedef {ReturnType<typeof stageOf>} Stage */
/** @typedef {ReturnType<typeof contentsOf>} Contents */

/**
 * @param {{ settings: { documents: number, chars: number, updateChars: number, idleMs: number }, redisVersion: string,
 *   typingMs: number, unloadMs: number, idle: Stage, contents: Contents, deleted: Stage }} report
 */
export function renderFootprint ({ settings, redisVersion, typingMs, unloadMs, idle, contents, deleted }) {
  const n = settings.documents
  const { snapshotBytes: snap, logEntries } = contents
  const fields = Object.entries(contents.snapshotFields).map(([name, count]) => count === contents.snapshots ? name : `${name} (${count})`).join(', ')
  const notes = {
    log: logEntries.total === 0
      ? 'XLEN 0: every log empty, its key kept'
      : `XLEN: ${logEntries.total} entries left in ${logEntries.logsWithEntries} of ${contents.logs} logs (at most ${logEntries.max} in one)`,
    snapshot: `data ${int(snap.mean)} B (HSTRLEN${snap.min === snap.max ? '' : `, mean; ${int(snap.min)}–${int(snap.max)}`}); fields: ${fields}`
  }
  return [
    `Redis ${redisVersion} (AOF, fsync every second). ${n} sessions created through the REST API; in each one editor typed ` +
      `${int(settings.chars)} characters of code in updates of ${settings.updateChars} (${(typingMs / 1000).toFixed(1)} s in all), then left; ` +
      `every document unloaded (compacted) ${(unloadMs / 1000).toFixed(1)} s later (DOC_IDLE_MS ${settings.idleMs} ms).`,
    '',
    `**Idle**: ${idle.added} keys added (DBSIZE ${idle.dbsize}), ${int(idle.perDocument.bytes)} B per document by MEMORY USAGE ` +
      `(snapshot data ${int(snap.mean)} B + ${int(idle.perDocument.bytes - snap.mean)} B beyond it); ${usedMemoryText(idle)}.`,
    '',
    ...kindTable(idle, n, notes),
    '',
    `**Deleted** (DELETE /api/sessions/:id each): ${deleted.added} keys added (DBSIZE ${deleted.dbsize}), ${int(deleted.perDocument.bytes)} B per document by MEMORY USAGE; ` +
      `${usedMemoryText(deleted)}.`,
    '',
    ...kindTable(deleted, n, {}),
    ''
  ].join('\n')
}

/** @param {Stage} stage @param {number} documents @param {Record<string, string>} notes */
function kindTable (stage, documents, notes) {
  const absent = KINDS.filter(({ kind }) => !stage.kinds.some(k => k.kind === kind && k.keys > 0)).map(({ kind }) => kind)
  return [
    '| Kind | Keys added | Type (encoding) | Bytes per document | TTL | Notes |',
    '|---|---:|---|---:|---|---|',
    // A kind the baseline holds and the stage adds nothing to (the warm-up's tombstone) is left out.
    ...stage.kinds.filter(kind => kind.added !== 0 || kind.perDocumentBytes !== 0).map(kind => `| ${kind.kind}: ${kind.what} | ${kind.added} | ${kind.types.join(', ') || '–'} | ${int(kind.perDocumentBytes)} | ${ttlText(kind)} | ${notes[kind.kind] ?? ''} |`),
    `| **all** | **${stage.added}** | | **${int(stage.perDocument.bytes)}** | | ${documents} documents |`,
    '',
    `No key of: ${absent.join(', ')}.`
  ]
}

/** @param {Stage} stage */
function usedMemoryText ({ perDocument }) {
  return `INFO memory over the baseline: used_memory ${signed(perDocument.usedMemory)} B per document, used_memory_dataset ${signed(perDocument.usedMemoryDataset)} B`
}

/** @param {Stage['kinds'][number]} kind */
function ttlText ({ keys, ttl }) {
  if (keys === 0) return '–'
  const never = ttl.never === keys ? 'none' : ttl.never > 0 ? `none on ${ttl.never}` : ''
  if (ttl.minMs === null || ttl.maxMs === null) return never
  const [min, max] = [duration(ttl.minMs), duration(ttl.maxMs)]
  const range = min === max ? min : `${min}–${max}`
  return never ? `${never}; ${range}` : range
}

/** @param {number} ms */
const duration = ms => ms >= DAY_MS ? `${(ms / DAY_MS).toFixed(2)} d` : `${(ms / 1000).toFixed(1)} s`

/** @param {number} value */
const signed = value => (value >= 0 ? '+' : '') + int(value)

/** @param {number} value */
const int = value => Math.round(value).toLocaleString('en-US')
