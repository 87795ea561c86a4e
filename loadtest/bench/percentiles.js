/**
 * Exact percentiles of a small sample (sorted copy), in the sample's unit.
 * @param {number[]} samples
 * @param {number[]} [ps]
 */
export function percentiles (samples, ps = [50, 90, 99]) {
  const sorted = [...samples].sort((a, b) => a - b)
  /** @type {Record<string, number>} */
  const result = {}
  for (const p of ps) result[`p${p}`] = sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]
  result.max = sorted[sorted.length - 1]
  return result
}

/** @param {number[]} samples */
export const median = samples => percentiles(samples, [50]).p50

/** @param {Record<string, number>} stats @param {number} [digits] */
export const format = (stats, digits = 2) =>
  Object.entries(stats).map(([key, value]) => `${key} ${value.toFixed(digits)}`).join('  ')
