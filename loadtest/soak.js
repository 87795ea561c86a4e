import { now, sleepUntil } from './clock.js'
import { runLevel } from './level.js'
import { memorySample, summarizeSoak } from './memory-series.js'

// Soak mode (`--soak 30m`): one load held for a long time, to find what a short level cannot: memory
// that grows while nothing else changes, and memory not given back once everyone has gone. The
// server's RSS, heap, documents and editors are sampled from /metrics every few seconds, from before
// the editors connect until, after they all left, the documents have unloaded (DOC_IDLE_MS).
//
// The load is held in cycles (`--soak-cycle`, 5 min): at the end of each, every room's editors leave,
// its session is deleted and a new room takes its place, as interviews and classes end and begin on a
// real server. A Yjs document keeps its history, so one that is edited for half an hour is several
// times larger than at minute 5 (each of 5 editors typing 5 edits/s adds about 1.5 MB to every copy
// of it in 5 minutes); with rooms that turn over, what the documents hold stays level, and memory
// that still grows is memory the server failed to give back.

// How often the unload wait looks at the latest sample; the samples themselves come every --soak-sample.
const UNLOAD_POLL_MS = 250

/**
 * Samples the server's memory every `everyMs` until stopped. A scrape that fails is skipped, not
 * fatal: a loaded server can be slow to answer, and the next one comes a few seconds later.
 */
class MemorySampler {
  /** @type {import('./memory-series.js').MemorySample[]} */
  series = []
  phase = 'idle'
  cycle = 0
  /** @type {number | null} */
  #origin = null
  #stopped = new AbortController()
  /** @type {Promise<void> | null} */
  #loop = null

  /**
   * @param {() => Promise<import('./server-stats.js').Scrape | null>} scrape
   * @param {number} everyMs
   */
  constructor (scrape, everyMs) {
    this.scrape = scrape
    this.everyMs = everyMs
  }

  async sample () {
    const scrape = await this.scrape().catch(() => null)
    if (!scrape) return null
    this.#origin ??= scrape.at
    const sample = memorySample(scrape.samples, { seconds: Math.round((scrape.at - this.#origin) / 100) / 10, phase: this.phase, cycle: this.cycle })
    this.series.push(sample)
    return sample
  }

  start () {
    const { signal } = this.#stopped
    this.#loop = (async () => {
      while (!signal.aborted) {
        const next = now() + this.everyMs
        await this.sample()
        await sleepUntil(next, signal)
      }
    })()
  }

  async stop () {
    this.#stopped.abort()
    await this.#loop
  }
}

/**
 * @param {object} soak
 * @param {Readonly<import('./options.js').Options>} soak.options
 * @param {import('./target.js').Target} soak.target
 * @param {(progress: import('./level.js').Progress) => void} soak.onProgress
 * @param {import('./spawn.js').NamedPid[]} soak.serverProcesses
 */
export async function runSoak ({ options, target, onProgress, serverProcesses }) {
  const editors = options.editors[0]
  const soakMs = options.soakMs ?? 0
  const sampler = new MemorySampler(() => target.scrape(), options.soakSampleMs)
  const idle = await sampler.sample()
  if (!idle) throw new Error('--soak samples the server\'s /metrics, which did not answer (does it need --metrics-token?)')
  sampler.start()
  let unloadWaitSeconds = null
  const cycleMs = Math.min(options.soakCycleMs, soakMs)
  const cycles = Math.max(1, Math.round(soakMs / cycleMs))
  const levels = []
  const waitForUnload = async () => {
    sampler.phase = 'unloading'
    const started = now()
    const deadline = started + options.soakUnloadWaitMs
    onProgress({ editors, phase: 'waiting for documents to unload', elapsedMs: 0, phaseMs: options.soakUnloadWaitMs })
    while (now() < deadline) {
      const last = sampler.series.at(-1)
      if (last?.phase === 'unloading' && last.documents <= idle.documents) break
      await sleepUntil(Math.min(deadline, now() + UNLOAD_POLL_MS))
      onProgress({ editors, phase: 'waiting for documents to unload', elapsedMs: now() - started, phaseMs: options.soakUnloadWaitMs })
    }
    unloadWaitSeconds = (now() - started) / 1000
    // Memory of the unloaded documents comes back at V8's next major collection, which an idle
    // process runs when it gets to it: keep sampling a while, and report the last sample.
    sampler.phase = 'unloaded'
    onProgress({ editors, phase: 'settling after the unload', elapsedMs: 0, phaseMs: options.soakSettleMs })
    await sleepUntil(now() + options.soakSettleMs)
    await sampler.sample()
  }
  try {
    for (let cycle = 1; cycle <= cycles; cycle++) {
      const last = cycle === cycles
      sampler.cycle = cycle
      levels.push(await runLevel({
        // The first cycle warms up; the later ones edit from their first second.
        options: { ...options, durationMs: last ? soakMs - cycleMs * (cycles - 1) : cycleMs, warmupMs: cycle === 1 ? options.warmupMs : 0 },
        target,
        trace: null,
        serverProcesses,
        onProgress: (progress) => {
          sampler.phase = progress.phase
          onProgress({ ...progress, phase: cycles > 1 ? `cycle ${cycle}/${cycles}: ${progress.phase}` : progress.phase })
        },
        // After the last cycle every editor has left and the sessions still exist, so the documents
        // unload as they would in production, once idle for DOC_IDLE_MS, rather than being deleted.
        afterLeave: last ? () => waitForUnload() : undefined
      }, editors))
    }
    await sampler.stop()
    return {
      levels,
      soak: {
        cycles,
        cycleSeconds: cycleMs / 1000,
        durationSeconds: soakMs / 1000,
        sampleSeconds: options.soakSampleMs / 1000,
        unloadWaitSeconds,
        settleSeconds: options.soakSettleMs / 1000,
        ...summarizeSoak(sampler.series, { soakMs, cycleMs }),
        series: sampler.series
      }
    }
  } finally {
    await sampler.stop()
  }
}

/** @typedef {Awaited<ReturnType<typeof runSoak>>['soak']} SoakResult */
