import { execFileSync } from 'node:child_process'
import { availableParallelism } from 'node:os'

// With --pin, the server under test runs on CPU 0 alone and the load generator on the others
// (taskset, Linux), so neither takes the other's core and a system's CPU figure is what it spent on
// a core of its own. Every thread of a process is moved, and threads started later inherit it.

/** Why pinning cannot be done here, or null. */
export function pinUnavailable () {
  if (availableParallelism() < 2) return 'needs at least 2 CPUs'
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' })
    return null
  } catch {
    return 'needs taskset (util-linux)'
  }
}

/** Moves every thread of the server process `pid` to CPU 0. @param {number} pid */
export function pinServer (pid) {
  pin(pid, '0')
}

/** Moves every thread of this process, the load generator, off CPU 0. */
export function pinGenerator () {
  pin(process.pid, `1-${availableParallelism() - 1}`)
}

/** @param {number} pid @param {string} cpus */
function pin (pid, cpus) {
  execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cpus, String(pid)], { stdio: 'ignore' })
}
