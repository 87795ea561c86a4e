// Whether a level's numbers describe the server. A generator thread that is busy nearly all the
// time, or edits leaving late or short of the rate while it had the CPU, mean the generator
// saturated first: its latencies then include its own queueing. Edits leaving late while the
// generator was idle, or "busy" for much longer than it ran on a CPU, mean something else on the
// machine took the CPU (other processes, CPU steal): the level was disturbed and should be run
// again. When server and generator together use nearly every core, they slow each other down. A
// generator that uses all the CPU it can have measures itself, whatever its threads report.

// Past about 80% busy, queueing in a generator thread adds visibly to the receipt times it records
// (50 editors in one document: broadcast p99 70 ms from one thread at 90%, 44 ms from two at 60%).
const BUSY_THREAD = 0.8
// Below this a thread had plenty of idle time: lateness then came from outside the generator.
const MOSTLY_IDLE = 0.5
// Event-loop utilization counts a callback's wall time, so a thread descheduled mid-callback looks
// busy without using CPU. Busy time beyond 1.5 × the process's CPU time + 10 points is starvation
// (seen: 53% busy on 20% CPU while other work ran; a saturated generator shows 90% on 96%).
const STARVED_RATIO = 1.5
const STARVED_SLACK = 10
const SHORT_RATE = 0.95
const SATURATED_MACHINE = 0.9
// The generator's CPU against what it can have: half the cores when the server runs on the same
// machine, all of them otherwise. From about a whole core of two, the generator rather than the
// server bounded what the reference machine could measure (docs/PERFORMANCE.md, "Capacity").
const SATURATED_GENERATOR = 0.95

/**
 * @param {object} input
 * @param {number} input.eventLoopUtilization busiest generator thread over the window, 0..1
 * @param {number | null} input.scheduleLagP99Ms how late edits left, p99
 * @param {number} input.editIntervalMs time between an editor's edits
 * @param {number} input.achievedRate edits/s per editor actually sent in the window
 * @param {number} input.targetRate edits/s per editor asked for
 * @param {boolean} input.traceFinished every editor ran out of trace (a short rate is then expected)
 * @param {number} input.generatorCpuPercent of one core
 * @param {number | null} input.serverCpuPercent of one core, null when unknown
 * @param {number} input.cores
 * @param {boolean} input.sharesMachine the server runs on this machine too (a loopback URL)
 * @returns {{ bottleneck: boolean, disturbed: boolean, warnings: string[] }}
 */
export function assessGenerator (input) {
  const warnings = []
  const busyPercent = input.eventLoopUtilization * 100
  const busy = input.eventLoopUtilization >= BUSY_THREAD
  const late = input.scheduleLagP99Ms !== null && input.scheduleLagP99Ms > Math.max(20, input.editIntervalMs / 4)
  const short = !input.traceFinished && input.achievedRate < input.targetRate * SHORT_RATE
  const starved = busyPercent > input.generatorCpuPercent * STARVED_RATIO + STARVED_SLACK
  const external = input.eventLoopUtilization < MOSTLY_IDLE || starved
  const generatorCores = input.sharesMachine ? input.cores / 2 : input.cores
  const saturated = input.generatorCpuPercent >= generatorCores * 100 * SATURATED_GENERATOR
  // A saturated generator took the CPU itself: its threads wait for a core, not for something else.
  const disturbed = !saturated && external && (busy || late || short)
  const behind = !external && (busy || late || short)
  const bottleneck = saturated || behind
  const symptoms = [
    busy && `a load-generator thread was busy ${Math.round(busyPercent)}% of the window`,
    late && `edits left the generator up to ${/** @type {number} */ (input.scheduleLagP99Ms).toFixed(0)} ms late (p99)`,
    short && `it sent ${input.achievedRate.toFixed(2)} edits/s per editor of the ${input.targetRate} asked for`
  ].filter(Boolean).join('; ')
  if (disturbed) {
    warnings.push(`${symptoms}, while the generator used ${Math.round(input.generatorCpuPercent)}% CPU and its busiest thread was ${Math.round(busyPercent)}% busy: ` +
      'something else on the machine took the CPU; run this level again')
  } else if (behind) {
    warnings.push(`${symptoms}: the generator could not keep up; try more --workers, or run it on another machine`)
  }
  if (saturated) {
    const share = input.sharesMachine ? `of the ${input.cores} cores, half of which is all it can have beside the server` : `all of the ${input.cores} cores`
    warnings.push(`the generator used ${Math.round(input.generatorCpuPercent)}% CPU, ${share}: these figures measure the generator, not the server; ` +
      'run it on another machine (--url … --allow-remote), or lighten it (--client wire)')
  }
  const used = input.generatorCpuPercent + (input.serverCpuPercent ?? 0)
  if (input.serverCpuPercent !== null && used >= input.cores * 100 * SATURATED_MACHINE) {
    warnings.push(`server (${Math.round(input.serverCpuPercent)}% CPU) and generator (${Math.round(input.generatorCpuPercent)}%) together saturate the ${input.cores} cores: they slow each other down`)
  }
  return { bottleneck, disturbed, warnings }
}
