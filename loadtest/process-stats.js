import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { now } from './clock.js'

// A server process's CPU time and memory as Linux reports them, read the same way for every system
// under test whatever it exposes itself: CPU from /proc/<pid>/stat (user + system time of all its
// threads, in clock ticks) and RSS from VmRSS in /proc/<pid>/status. The whole machine's busy time
// (/proc/stat) is read over the same window, so what other processes took is known too.

const MB = 1024 * 1024
const TICKS_PER_SECOND = clockTicks()

/** @typedef {{ cpuMs: number, rssBytes: number }} ProcessSample */

/**
 * @param {number} pid
 * @returns {ProcessSample | null} null when /proc has no such process
 */
export function readProcess (pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12]) // utime, stime: fields 14 and 15
    const rssKiB = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN)
    return { cpuMs: ticks * 1000 / TICKS_PER_SECOND, rssBytes: rssKiB * 1024 }
  } catch {
    return null
  }
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

/** CPU and RSS of one process over a window: `open`, `sample` now and then (for the peak RSS), `close`. */
export class ProcessProbe {
  /** @type {{ at: number, sample: ProcessSample, machineMs: number | null } | null} */
  #start = null
  #peakRss = 0

  /** @param {number} pid */
  constructor (pid) {
    this.pid = pid
  }

  open () {
    const sample = readProcess(this.pid)
    this.#start = sample && { at: now(), sample, machineMs: readMachineBusyMs() }
    this.#peakRss = sample?.rssBytes ?? 0
  }

  sample () {
    this.#peakRss = Math.max(this.#peakRss, readProcess(this.pid)?.rssBytes ?? 0)
  }

  /** @returns {ProcessStats | null} null when the process could not be read */
  close () {
    const end = readProcess(this.pid)
    const machineMs = readMachineBusyMs()
    if (!this.#start || !end) return null
    const ms = now() - this.#start.at
    const cpuMs = end.cpuMs - this.#start.sample.cpuMs
    const startMachineMs = this.#start.machineMs
    return {
      cpuMs,
      cpuPercent: cpuMs / ms * 100,
      machineCpuPercent: machineMs === null || startMachineMs === null ? null : (machineMs - startMachineMs) / ms * 100,
      rssMB: end.rssBytes / MB,
      peakRssMB: Math.max(this.#peakRss, end.rssBytes) / MB
    }
  }
}

/**
 * @typedef {object} ProcessStats CPU in % of one core
 * @property {number} cpuMs
 * @property {number} cpuPercent
 * @property {number | null} machineCpuPercent every process on the machine, this one included (up to cores × 100)
 * @property {number} rssMB at the window's end
 * @property {number} peakRssMB
 */

function clockTicks () {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  } catch {
    return 100 // USER_HZ on every mainstream Linux build
  }
}
