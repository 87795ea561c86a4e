// ACK latency of one editor sending updates one after another to a real server process: the time from
// emit to `{ ok: true }`, which includes the durable write. Runs once with default writes and once with
// SYNC_WRITES=true (fsync per write batch), so the cost of power-loss durability is measured too.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TandemApi } from '../loadtest/api.js'
import { createHistogram, recordMs, summarize } from '../loadtest/histogram.js'
import { startServerProcess } from '../loadtest/spawn.js'
import { joinEditor } from './joined-editor.js'

const UPDATES = 1000
const WARMUP = 100

/** @param {Record<string, string>} env */
async function measure (env) {
  const dir = await mkdtemp(join(tmpdir(), 'tandem-bench-'))
  // Updates go out as fast as ACKs return: the per-connection rate is set out of reach (not off, so
  // its check is still on the measured path).
  const { url, server } = await startServerProcess({ DATA_DIR: dir, LOG_LEVEL: 'info', UPDATES_PER_SECOND: '1000000', ...env })
    .catch(async (err) => { await rm(dir, { recursive: true, force: true }); throw err })
  try {
    const session = await new TandemApi(url, null).createSession({ name: 'bench' })
    const editor = await joinEditor(url, session.id)
    const latency = createHistogram()
    for (let i = 0; i < WARMUP + UPDATES; i++) {
      const started = performance.now()
      const reply = await editor.insert(editor.text.length, 'x')
      if (!reply.ok) throw new Error(`refused: ${reply.code}`)
      if (i >= WARMUP) recordMs(latency, performance.now() - started)
    }
    editor.close()
    return /** @type {import('../loadtest/histogram.js').LatencySummary} */ (summarize(latency))
  } finally {
    await server.stop('SIGTERM')
    await rm(dir, { recursive: true, force: true })
  }
}

export async function run () {
  /** @type {Record<string, Record<string, number>>} */
  const results = {}
  for (const [label, env] of /** @type {const} */ ([['default writes', {}], ['SYNC_WRITES=true', { SYNC_WRITES: 'true' }]])) {
    const { p50, p90, p99, max } = await measure(env)
    results[label] = { p50, p90, p99, max }
    const figures = Object.entries(results[label]).map(([name, ms]) => `${name} ${ms.toFixed(2)}`).join('  ')
    console.log(`ACK latency, 1 editor, ${UPDATES} sequential updates (${WARMUP} warm-up excluded), ${label}: ${figures} ms`)
  }
  return results
}

if (import.meta.url === `file://${process.argv[1]}`) await run()
