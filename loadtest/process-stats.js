import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { now } from './clock.js'

// A server's CPU time and memory as Linux reports them, read the same way for every system
// under test whatever it exposes itself: CPU from /proc/<pid>/stat (user + system time of all its
// threads, in clock ticks) and RSS from VmRSS in /proc/<pid>/status. The main thread's own CPU
// (/proc/<pid>/task/<pid>/stat) is read too: a Node.js process is saturated when its event loop's
// thread is, whatever its thread pool and V8's helper threads add on other cores. The whole
// machine's busy time (/proc/stat) is read over the same window, so what other processes took is
// known too.

const MB = 1024 * 1024
const TICKS_PER_SECOND = clockTicks()

/** @typedef {{ cpuMs: number, mainThreadCpuMs: number, rssBytes: number }} ProcessSample */

/**
 * @param {number} pid
 * @returns {ProcessSample | null} null when /proc has no such process
 */
export function readProcess (pid) {
  try {
    const ticks = cpuTicks(`/proc/${pid}/stat`)
    const mainThreadTicks = cpuTicks(`/proc/${pid}/task/${pid}/stat`)
    const rssKiB = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN)
    return { cpuMs: ticks * 1000 / TICKS_PER_SECOND, mainThreadCpuMs: mainThreadTicks * 1000 / TICKS_PER_SECOND, rssBytes: rssKiB * 1024 }
  } catch {
    return null
  }
}

/** User + system time, in clock ticks, from a /proc stat file (of a process or of one thread). @param {string} path */
function cpuTicks (path) {
  const stat = readFileSync(path, 'utf8')
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return Number(fields[11]) + Number(fields[12]) // utime, stime: fields 14 and 15
}

/** CPU time every core of the machine spent busy (not idle or waiting on I/O), or null. */
export function readMachineBusyMs () {
  try {
    const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
    return (user + nice + system + irq + softirq + steal) * 1000 / TICKS_PER_SECOND
  } catch {
    return null
  }
}

/**
 * CPU and RSS of the processes of a server (several server processes and Redis, say) over a window:
 * `open`, `sample` now and then (for the peak RSS), `close`. The totals are the sums over every
 * process, so a cluster's CPU includes what Redis spent for it.
 */
export class ProcessProbe {
  /** @type {{ at: number, samples: (ProcessSample | null)[], machineMs: number | null } | null} */
  #start = null
  #peakRss = 0
  /** @type {number[]} */
  #peakEach = []

  /** @param {import('./spawn.js').NamedPid[]} processes */
  constructor (processes) {
    this.processes = processes
  }

  open () {
    const samples = this.processes.map(({ pid }) => readProcess(pid))
    this.#start = { at: now(), samples, machineMs: readMachineBusyMs() }
    this.#peakEach = samples.map(sample => sample?.rssBytes ?? 0)
    this.#peakRss = totalRss(samples)
  }

  sample () {
    const samples = this.processes.map(({ pid }) => readProcess(pid))
    samples.forEach((sample, i) => { this.#peakEach[i] = Math.max(this.#peakEach[i] ?? 0, sample?.rssBytes ?? 0) })
    this.#peakRss = Math.max(this.#peakRss, totalRss(samples))
  }

  /** @returns {ProcessStats | null} null when a process could not be read */
  close () {
    const ends = this.processes.map(({ pid }) => readProcess(pid))
    const machineMs = readMachineBusyMs()
    const start = this.#start
    if (!start || ends.some(end => end === null) || start.samples.some(sample => sample === null)) return null
    const ms = now() - start.at
    const each = this.processes.map(({ name, pid }, i) => {
      const end = /** @type {ProcessSample} */ (ends[i])
      const begin = /** @type {ProcessSample} */ (start.samples[i])
      const cpuMs = end.cpuMs - begin.cpuMs
      const mainThreadCpuPercent = (end.mainThreadCpuMs - begin.mainThreadCpuMs) / ms * 100
      return { name, pid, cpuMs, cpuPercent: cpuMs / ms * 100, mainThreadCpuPercent, rssMB: end.rssBytes / MB, peakRssMB: Math.max(this.#peakEach[i], end.rssBytes) / MB }
    })
    const cpuMs = each.reduce((total, p) => total + p.cpuMs, 0)
    return {
      cpuMs,
      cpuPercent: cpuMs / ms * 100,
      busiestMainThreadPercent: Math.max(...each.map(p => p.mainThreadCpuPercent)),
      machineCpuPercent: machineMs === null || start.machineMs === null ? null : (machineMs - start.machineMs) / ms * 100,
      rssMB: totalRss(ends) / MB,
      peakRssMB: Math.max(this.#peakRss, totalRss(ends)) / MB,
      processes: each
    }
  }
}

/** @param {(ProcessSample | null)[]} samples */
const totalRss = samples => samples.reduce((total, sample) => total + (sample?.rssBytes ?? 0), 0)

/**
 * @typedef {object} ProcessStats CPU in % of one core; totals over every process
 * @property {number} cpuMs
 * @property {number} cpuPercent
 * @property {number} busiestMainThreadPercent the main thread of the busiest process: how near its event loop is to saturation
 * @property {number | null} machineCpuPercent every process on the machine, these included (up to cores × 100)
 * @property {number} rssMB at the window's end
 * @property {number} peakRssMB of the total
 * @property {{ name: string, pid: number, cpuMs: number, cpuPercent: number, mainThreadCpuPercent: number, rssMB: number, peakRssMB: number }[]} processes each one
 */

function clockTicks () {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100 // USER_HZ on every mainstream Linux build
  }
}
