import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { describe, it } from 'node:test'
import { ProcessProbe } from '../loadtest/process-stats.js'

// A busy loop for about `seconds`, on the main thread or on a worker thread of a child process.
// It gets a full core on a quiet machine; SPINNING is a floor it stays above on a busy one (two
// cores shared with other test processes gave it 59 %), enough to tell a spinning thread from idle.
const SPINNING = 30
const BUSY = 'const end = Date.now() + SECONDS * 1000; while (Date.now() < end) {}'

/**
 * CPU of a child that spins where it is told, measured by ProcessProbe over one second.
 * @param {'main' | 'worker'} where
 */
async function measure (where) {
  const busy = BUSY.replace('SECONDS', '3')
  const script = where === 'main'
    ? busy
    : `const { Worker } = require('node:worker_threads'); new Worker(${JSON.stringify(busy)}, { eval: true })`
  const child = spawn(process.execPath, ['-e', script], { stdio: 'ignore' })
  try {
    await sleep(500)
    const probe = new ProcessProbe([{ name: 'child', pid: /** @type {number} */ (child.pid) }])
    probe.open()
    await sleep(1000)
    const stats = probe.close()
    assert.ok(stats, 'the child was read from /proc')
    return stats
  } finally {
    child.kill('SIGKILL')
    await once(child, 'exit')
  }
}

describe('the server process probe: CPU of the whole process and of its main thread', { skip: process.platform !== 'linux' && 'reads /proc (Linux)' }, () => {
  it('counts a main thread that spins as the process\'s CPU', async () => {
    const stats = await measure('main')
    assert.ok(stats.cpuPercent > SPINNING, `process ${stats.cpuPercent}%`)
    assert.ok(stats.busiestMainThreadPercent > stats.cpuPercent - 15, `main thread ${stats.busiestMainThreadPercent}% of ${stats.cpuPercent}%`)
    assert.equal(stats.processes[0].mainThreadCpuPercent, stats.busiestMainThreadPercent)
  })

  it('tells a process busy on another thread apart: its main thread stays near idle', async () => {
    const stats = await measure('worker')
    assert.ok(stats.cpuPercent > SPINNING, `process ${stats.cpuPercent}%`)
    assert.ok(stats.busiestMainThreadPercent < 15, `main thread ${stats.busiestMainThreadPercent}% of ${stats.cpuPercent}%`)
  })
})
