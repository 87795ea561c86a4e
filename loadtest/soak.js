import { now, sleepUntil } from './clock.js'
import { runLevel } from './level.js'
import { memorySample, summarizeSoak } from './memory-series.js'

// Soak mode (`--soak 30m`): one level held for a long time, to find what a short level cannot: memory
// that grows while nothing else changes, and memory not given back once everyone has gone. The
// server's RSS, heap, documents and editors are sampled from /metrics every few seconds, from before
// the editors connect until, after they all left, the documents have unloaded (DOC_IDLE_MS).

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
    const sample = memorySample(scrape.samples, { seconds: Math.round((scrape.at - this.#origin) / 100) / 10, phase: this.phase })
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
  try {
    const level = await runLevel({
      options: { ...options, durationMs: soakMs },
      target,
      trace: null,
      serverProcesses,
      onProgress: (progress) => {
        sampler.phase = progress.phase
        onProgress(progress)
      },
      // Every editor has left; the sessions still exist, so the documents unload as they would in
      // production, once idle for DOC_IDLE_MS, rather than being deleted.
      afterLeave: async () => {
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
    }, editors)
    await sampler.stop()
    return {
      level,
      soak: {
        durationSeconds: soakMs / 1000,
        sampleSeconds: options.soakSampleMs / 1000,
        unloadWaitSeconds,
        settleSeconds: options.soakSettleMs / 1000,
        ...summarizeSoak(sampler.series, { soakMs }),
        series: sampler.series
      }
    }
  } finally {
    await sampler.stop()
  }
}

/** @typedef {Awaited<ReturnType<typeof runSoak>>['soak']} SoakResult */
