// ACK latency of one editor sending updates one after another to a real server process: the time from
// emit to `{ ok: true }`, which includes the durable write. Runs once with default writes and once with
// SYNC_WRITES=true (fsync per write batch), so the cost of power-loss durability is measured too.
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startChildServer } from '../../test/helpers/child-server.js'
import { TestEditor } from '../../test/helpers/editor.js'
import { createSession } from '../../test/helpers/server.js'
import { format, percentiles } from './percentiles.js'

const UPDATES = 1000
const WARMUP = 100

/** @param {Record<string, string>} env */
async function measure (env) {
  const dir = await mkdtemp(join(tmpdir(), 'tandem-bench-'))
  // Updates go out as fast as ACKs return: the per-connection rate is set out of reach (not off, so
  // its check is still on the measured path).
  const server = await startChildServer({ DATA_DIR: dir, LOG_LEVEL: 'info', UPDATES_PER_SECOND: '1000000', ...env })
  try {
    const session = await createSession(server.url)
    const editor = new TestEditor(server.url)
    await editor.join(session.id)
    const samples = []
    for (let i = 0; i < WARMUP + UPDATES; i++) {
      const started = performance.now()
      const reply = await editor.insert(session.id, editor.text(session.id).length, 'x')
      if (!reply.ok) throw new Error(`refused: ${reply.error.code}`)
      if (i >= WARMUP) samples.push(performance.now() - started)
    }
    editor.close()
    return percentiles(samples)
  } finally {
    await server.stop('SIGTERM')
    await rm(dir, { recursive: true, force: true })
  }
}

export async function run () {
  /** @type {Record<string, Record<string, number>>} */
  const results = {}
  for (const [label, env] of /** @type {const} */ ([['default writes', {}], ['SYNC_WRITES=true', { SYNC_WRITES: 'true' }]])) {
    const stats = await measure(env)
    results[label] = stats
    console.log(`ACK latency, 1 editor, ${UPDATES} sequential updates (${WARMUP} warm-up excluded), ${label}: ${format(stats)} ms`)
  }
  return results
}

if (import.meta.url === `file://${process.argv[1]}`) await run()
