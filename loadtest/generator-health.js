// Whether a level's numbers describe the server or the load generator. A generator thread that is
// busy nearly all the time, edits leaving late, or a rate short of the target mean the generator
// saturated first: its latencies then include its own queueing, and the level says little about the
// server. When server and generator together use nearly every core, they slow each other down.

// Past about 80% busy, queueing in a generator thread adds visibly to the receipt times it records
// (50 editors in one document: broadcast p99 70 ms from one thread at 90%, 44 ms from two at 60%).
const BUSY_THREAD = 0.8
const SHORT_RATE = 0.95
const SATURATED_MACHINE = 0.9

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
 * @returns {{ bottleneck: boolean, warnings: string[] }}
 */
export function assessGenerator (input) {
  const warnings = []
  let bottleneck = false
  if (input.eventLoopUtilization >= BUSY_THREAD) {
    bottleneck = true
    warnings.push(`a load-generator thread was busy ${Math.round(input.eventLoopUtilization * 100)}% of the window: try more --workers, or run the generator on another machine`)
  }
  const lagLimit = Math.max(20, input.editIntervalMs / 4)
  if (input.scheduleLagP99Ms !== null && input.scheduleLagP99Ms > lagLimit) {
    bottleneck = true
    warnings.push(`edits left the generator up to ${input.scheduleLagP99Ms.toFixed(0)} ms late (p99): it could not keep its schedule`)
  }
  if (!input.traceFinished && input.achievedRate < input.targetRate * SHORT_RATE) {
    bottleneck = true
    warnings.push(`sent ${input.achievedRate.toFixed(2)} edits/s per editor of the ${input.targetRate} asked for`)
  }
  const used = input.generatorCpuPercent + (input.serverCpuPercent ?? 0)
  if (input.serverCpuPercent !== null && used >= input.cores * 100 * SATURATED_MACHINE) {
    warnings.push(`server (${Math.round(input.serverCpuPercent)}% CPU) and generator (${Math.round(input.generatorCpuPercent)}%) together saturate the ${input.cores} cores: they slow each other down`)
  }
  return { bottleneck, warnings }
}
