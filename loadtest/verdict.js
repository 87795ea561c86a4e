// The capacity verdict: which levels meet the SLOs, the largest load that does (with every smaller
// level meeting them too), and where tail latency stops growing in proportion to the load.

// Below this p99 a jump between levels is scheduling noise, not a knee.
const KNEE_FLOOR_MS = 5
// A level whose p99 exceeds this multiple of the trend of the levels below is past the knee.
const KNEE_FACTOR = 2

/** @typedef {{ ackP99Ms: number, broadcastP99Ms: number }} Slo */

/**
 * The SLOs a level misses, as sentences; none when it meets them all.
 * @param {import('./level-result.js').LevelResult} level
 * @param {Slo} slo
 */
export function sloFailures (level, slo) {
  const failures = []
  if (level.connect.failed > 0) failures.push(`${level.connect.failed} editors could not join`)
  const ackP99 = level.ackMs?.p99
  if (ackP99 === undefined) failures.push('no update was acknowledged')
  else if (ackP99 > slo.ackP99Ms) failures.push(`ACK p99 ${round(ackP99)} ms > ${slo.ackP99Ms} ms`)
  const broadcastP99 = level.broadcast.latencyMs?.p99
  if (level.broadcast.expected > 0 && broadcastP99 === undefined) failures.push('no broadcast arrived')
  else if (broadcastP99 !== undefined && broadcastP99 > slo.broadcastP99Ms) failures.push(`broadcast p99 ${round(broadcastP99)} ms > ${slo.broadcastP99Ms} ms`)
  if (level.broadcast.lost > 0) failures.push(`${level.broadcast.lost} broadcasts lost`)
  if (level.updates.timedOut > 0) failures.push(`${level.updates.timedOut} updates timed out`)
  if (level.updates.refused > 0) failures.push(`${level.updates.refused} updates refused`)
  if (level.disconnects > 0) failures.push(`${level.disconnects} editors disconnected`)
  // null: not checked (editors that do not apply what they receive cannot be compared).
  if (level.convergence.converged === false) failures.push(`${level.convergence.diverged} of ${level.convergence.rooms} documents diverged`)
  return failures
}

/**
 * The first level whose p99 exceeds KNEE_FACTOR times the trend of the levels below it: a straight
 * line through the previous two levels (slope at least 0), or, above the first level alone, growth
 * in proportion to the editors. Null when latency grows smoothly throughout.
 * @param {{ editors: number, p99: number | null | undefined }[]} points ascending by editors
 */
export function findKnee (points) {
  for (let i = 1; i < points.length; i++) {
    const [older, previous, current] = [points[i - 2], points[i - 1], points[i]]
    if (previous.p99 == null || current.p99 == null) continue
    let predicted
    if (older?.p99 != null && previous.editors > older.editors) {
      const slope = Math.max(0, (previous.p99 - older.p99) / (previous.editors - older.editors))
      predicted = previous.p99 + slope * (current.editors - previous.editors)
    } else {
      predicted = previous.p99 * current.editors / previous.editors
    }
    if (current.p99 > Math.max(KNEE_FACTOR * predicted, KNEE_FLOOR_MS)) return current.editors
  }
  return null
}

/**
 * @param {import('./level-result.js').LevelResult[]} levels
 * @param {Slo} slo
 */
export function verdict (levels, slo) {
  const sorted = [...levels].sort((a, b) => a.editors - b.editors)
  const checks = sorted.map(level => ({ editors: level.editors, failures: sloFailures(level, slo), generatorLimited: level.generator.bottleneck, disturbed: level.generator.disturbed }))
  const firstFailure = checks.find(check => check.failures.length > 0) ?? null
  const passing = checks.filter(check => check.failures.length === 0 && (!firstFailure || check.editors < firstFailure.editors))
  const capacity = passing.at(-1)?.editors ?? null
  const knee = {
    ack: findKnee(sorted.map(level => ({ editors: level.editors, p99: level.ackMs?.p99 }))),
    broadcast: findKnee(sorted.map(level => ({ editors: level.editors, p99: level.broadcast.latencyMs?.p99 })))
  }
  const generatorLimited = checks.filter(check => check.generatorLimited).map(check => check.editors)
  const disturbed = checks.filter(check => check.disturbed).map(check => check.editors)
  // Every level passed: the capacity is at least the highest level tried, not a measured limit.
  const capacityIsLowerBound = capacity !== null && firstFailure === null
  const p99Grew = grew(sorted.map(level => level.ackMs?.p99)) && grew(sorted.map(level => level.broadcast.latencyMs?.p99))
  return {
    slo,
    capacity,
    capacityIsLowerBound,
    firstFailure,
    knee,
    generatorLimited,
    disturbed,
    summary: summary({ capacity, capacityIsLowerBound, firstFailure, knee, p99Grew, generatorLimited, disturbed, slo })
  }
}

/** @typedef {ReturnType<typeof verdict>} Verdict */

/**
 * @param {object} input
 * @param {number | null} input.capacity
 * @param {boolean} input.capacityIsLowerBound
 * @param {boolean} input.p99Grew whether p99 ended higher than it started, for ACK and broadcast
 * @param {{ editors: number, failures: string[] } | null} input.firstFailure
 * @param {{ ack: number | null, broadcast: number | null }} input.knee
 * @param {number[]} input.generatorLimited
 * @param {number[]} input.disturbed
 * @param {Slo} input.slo
 */
function summary ({ capacity, capacityIsLowerBound, firstFailure, knee, p99Grew, generatorLimited, disturbed, slo }) {
  const slos = `ACK p99 ≤ ${slo.ackP99Ms} ms, broadcast p99 ≤ ${slo.broadcastP99Ms} ms, no loss, no errors, converged`
  const parts = [capacity === null
    ? `No level met the SLOs (${slos}).`
    : capacityIsLowerBound
      ? `Capacity: ≥ ${capacity} editors (highest tried): every level met the SLOs (${slos}).`
      : `Capacity: ${capacity} editors met the SLOs (${slos}).`]
  if (firstFailure) parts.push(`${firstFailure.editors} editors did not: ${firstFailure.failures.join('; ')}.`)
  else parts.push('The limit lies above the largest level tested: add higher levels to find it.')
  const knees = [knee.ack !== null && `ACK at ${knee.ack} editors`, knee.broadcast !== null && `broadcast at ${knee.broadcast} editors`].filter(Boolean)
  if (knees.length > 0) parts.push(`Tail latency turns non-linear: ${knees.join(', ')}.`)
  else if (p99Grew) parts.push('Tail latency grows without a knee over the levels tested.')
  else parts.push('No knee in tail latency over the levels tested (p99 did not rise with the load).')
  if (generatorLimited.length > 0) {
    parts.push(`At ${generatorLimited.join(', ')} editors the load generator, not the server, was the bottleneck: those levels understate the server.`)
  }
  if (disturbed.length > 0) {
    parts.push(`At ${disturbed.join(', ')} editors something else on the machine took the CPU while the generator was idle: run those levels again before trusting them.`)
  }
  return parts.join(' ')
}

/**
 * Whether the last known value is at least the first: a p99 that fell between the lowest and the
 * highest level did not "grow". Levels without a value are left out.
 * @param {(number | null | undefined)[]} values
 */
function grew (values) {
  const known = values.filter(value => typeof value === 'number')
  return known.length < 2 || /** @type {number} */ (known.at(-1)) >= known[0]
}

/** @param {number} ms */
const round = ms => ms < 10 ? ms.toFixed(2) : ms.toFixed(1)
