import { sum } from './prometheus.js'

// The soak's figures, from the memory samples alone: how the server's RSS and heap grew while the
// editors kept editing (from `slopeFrom` into the editing to its end, so start-up allocation and JIT
// warm-up are left out), and how close they came back to the idle baseline once every editor had
// left and the documents had unloaded. Sums run across workers, so a cluster counts as one server.

const MINUTE = 60 * 1000

/** Growth is measured from minute 5 of the editing, or from halfway through a soak shorter than 10 minutes. */
export const SLOPE_FROM_MS = 5 * MINUTE

/**
 * @typedef {object} MemorySample
 * @property {number} seconds since the first sample
 * @property {string} phase `idle` before the editors, the level's phase while they run (`connecting`,
 *   `warm-up`, `measuring`, ...), `unloading` once they left, `unloaded` at the end
 * @property {number} rssBytes process_resident_memory_bytes
 * @property {number} heapUsedBytes nodejs_heap_size_used_bytes
 * @property {number} documents tandem_documents_loaded
 * @property {number} editors tandem_editors
 * @property {number} cycle the soak's cycle (0 before the first)
 */

/**
 * One sample from a /metrics scrape.
 * @param {import('./prometheus.js').Sample[]} samples
 * @param {{ seconds: number, phase: string, cycle: number }} at
 * @returns {MemorySample}
 */
export function memorySample (samples, { seconds, phase, cycle }) {
  return {
    seconds,
    phase,
    cycle,
    rssBytes: sum(samples, 'process_resident_memory_bytes'),
    heapUsedBytes: sum(samples, 'nodejs_heap_size_used_bytes'),
    documents: sum(samples, 'tandem_documents_loaded'),
    editors: sum(samples, 'tandem_editors')
  }
}

/** Phases in which the editors are editing. */
const EDITING = new Set(['warm-up', 'measuring'])

/**
 * @param {MemorySample[]} series in time order
 * @param {{ soakMs: number, cycleMs?: number }} settings
 */
export function summarizeSoak (series, { soakMs, cycleMs = soakMs }) {
  const idle = series.filter(s => s.phase === 'idle')
  const baseline = idle.at(-1) ?? null
  const editing = series.filter(s => EDITING.has(s.phase))
  const slopeFromMs = Math.min(SLOPE_FROM_MS, soakMs / 2)
  const first = editing[0]
  const { from, to } = first ? growthPoints(editing, first, slopeFromMs, cycleMs) : { from: null, to: null }
  const after = series.filter(s => s.phase === 'unloaded').at(-1) ?? null
  const peak = series.reduce((most, s) => Math.max(most, s.documents), 0)
  return {
    samples: series.length,
    baseline: baseline && { rssBytes: baseline.rssBytes, heapUsedBytes: baseline.heapUsedBytes, documents: baseline.documents },
    peak: {
      rssBytes: Math.max(0, ...series.map(s => s.rssBytes)),
      heapUsedBytes: Math.max(0, ...series.map(s => s.heapUsedBytes)),
      documents: peak
    },
    slope: from && to && from !== to
      ? {
          fromSeconds: from.seconds,
          toSeconds: to.seconds,
          /** minutes into the editing the growth is measured from */
          fromMinute: (from.seconds - /** @type {MemorySample} */ (first).seconds) / 60,
          rssPercent: growth(from.rssBytes, to.rssBytes),
          heapPercent: growth(from.heapUsedBytes, to.heapUsedBytes),
          rssBytesPerHour: (to.rssBytes - from.rssBytes) / (to.seconds - from.seconds) * 3600
        }
      : null,
    unload: baseline && after
      ? {
          unloaded: after.documents <= baseline.documents,
          documentsLeft: after.documents,
          seconds: after.seconds,
          rssBytes: after.rssBytes,
          heapUsedBytes: after.heapUsedBytes,
          rssPercentVsBaseline: growth(baseline.rssBytes, after.rssBytes),
          heapPercentVsBaseline: growth(baseline.heapUsedBytes, after.heapUsedBytes)
        }
      : null
  }
}

/**
 * The two samples growth is measured between. In a soak held in one cycle: from `slopeFromMs` into the
 * editing to its end. With rooms that turn over, the same point of their life must be compared
 * (memory rises through a cycle and falls when its documents go): the last sample of the first cycle
 * in which `slopeFromMs` falls, and the last sample of the last cycle.
 * @param {MemorySample[]} editing
 * @param {MemorySample} first
 * @param {number} slopeFromMs
 * @param {number} cycleMs
 */
function growthPoints (editing, first, slopeFromMs, cycleMs) {
  const intoEditingMs = (/** @type {MemorySample} */ s) => (s.seconds - first.seconds) * 1000
  const cycleEnds = editing.filter((s, i) => editing[i + 1]?.cycle !== s.cycle)
  if (cycleEnds.length > 1) {
    const fromCycle = Math.min(cycleEnds.length - 2, Math.max(0, Math.ceil(slopeFromMs / cycleMs) - 1))
    return { from: cycleEnds[fromCycle], to: cycleEnds.at(-1) ?? null }
  }
  return { from: editing.find(s => intoEditingMs(s) >= slopeFromMs) ?? null, to: editing.at(-1) ?? null }
}

/** @param {number} from @param {number} to */
const growth = (from, to) => from > 0 ? (to - from) / from * 100 : null

/** @typedef {ReturnType<typeof summarizeSoak>} SoakSummary */
