// The server's /metrics as samples with their labels, summed across label sets (a cluster reports
// every worker's series with a `worker` label), and quantiles estimated from histogram buckets the way
// PromQL's histogram_quantile does. The server sends prom-client's JSON (`getMetricsAsJSON`), so
// no text is parsed here.

/** @typedef {{ name: string, labels: Record<string, string>, value: number }} Sample */
/**
 * One metric as prom-client's `getMetricsAsJSON` gives it: a histogram's values name their series
 * (`x_bucket` with an `le` label, `x_sum`, `x_count`).
 * @typedef {{ name: string, values: { value: number, labels: Record<string, string | number>, metricName?: string }[] }} MetricJson
 */

/**
 * @param {MetricJson[]} metrics
 * @returns {Sample[]}
 */
export function samplesOf (metrics) {
  return metrics.flatMap(metric => metric.values.map(({ value, labels, metricName }) => ({
    name: metricName ?? metric.name,
    labels: Object.fromEntries(Object.entries(labels).map(([key, label]) => [key, String(label)])),
    value
  })))
}

/**
 * Sum of every series of `name` whose labels include `where`.
 * @param {Sample[]} samples
 * @param {string} name
 * @param {Record<string, string>} [where]
 */
export function sum (samples, name, where = {}) {
  let total = 0
  for (const sample of samples) {
    if (sample.name === name && matches(sample, where)) total += sample.value
  }
  return total
}

/**
 * Largest value among the series of `name` (gauges such as event-loop lag, where a sum across
 * workers would mean nothing); null when there is none.
 * @param {Sample[]} samples
 * @param {string} name
 */
export function max (samples, name) {
  const values = samples.filter(sample => sample.name === name && Number.isFinite(sample.value)).map(sample => sample.value)
  return values.length === 0 ? null : Math.max(...values)
}

/**
 * Cumulative bucket counts of histogram `name`, summed across series, by upper bound.
 * @param {Sample[]} samples
 * @param {string} name histogram name without `_bucket`
 * @returns {{ le: number, count: number }[]}
 */
export function buckets (samples, name) {
  /** @type {Map<number, number>} */
  const byBound = new Map()
  for (const sample of samples) {
    if (sample.name !== `${name}_bucket`) continue
    const le = sample.labels.le === '+Inf' ? Infinity : Number(sample.labels.le)
    byBound.set(le, (byBound.get(le) ?? 0) + sample.value)
  }
  return [...byBound].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le)
}

/**
 * Bucket counts observed between two scrapes.
 * @param {{ le: number, count: number }[]} before
 * @param {{ le: number, count: number }[]} after
 */
export function bucketDelta (before, after) {
  const earlier = new Map(before.map(({ le, count }) => [le, count]))
  return after.map(({ le, count }) => ({ le, count: count - (earlier.get(le) ?? 0) }))
}

/**
 * The q-quantile from cumulative buckets, interpolating linearly inside the bucket that holds it.
 * Observations beyond the last finite bound report that bound. Null without observations.
 * @param {{ le: number, count: number }[]} cumulative
 * @param {number} q 0..1
 */
export function quantile (cumulative, q) {
  const total = cumulative.at(-1)?.count ?? 0
  if (total === 0) return null
  const rank = q * total
  let lowerBound = 0
  let lowerCount = 0
  for (const { le, count } of cumulative) {
    if (count >= rank) {
      if (le === Infinity) return lowerBound
      if (count === lowerCount) return le
      return lowerBound + (le - lowerBound) * (rank - lowerCount) / (count - lowerCount)
    }
    lowerBound = le
    lowerCount = count
  }
  return lowerBound
}

/** @param {Sample} sample @param {Record<string, string>} where */
function matches (sample, where) {
  for (const [key, value] of Object.entries(where)) if (sample.labels[key] !== value) return false
  return true
}
