import * as hdr from 'hdr-histogram-js'

// Latencies are recorded in microseconds in HDR histograms (3 significant digits), so percentiles of a
// level come from every sample of every worker merged, never from averages of averages. Workers send
// their histograms to the main thread in HDR's compressed encoding.

const HIGHEST_US = 10 * 60 * 1e6

/** @typedef {import('hdr-histogram-js').Histogram} Histogram */
/** @typedef {{ count: number, p50: number, p90: number, p99: number, max: number, mean: number }} LatencySummary */

export function createHistogram () {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: HIGHEST_US, numberOfSignificantValueDigits: 3 })
}

/** @param {Histogram} histogram @param {number} ms */
export function recordMs (histogram, ms) {
  histogram.recordValue(Math.min(HIGHEST_US, Math.max(1, Math.round(ms * 1000))))
}

/** @param {Histogram} histogram */
export const encode = histogram => hdr.encodeIntoCompressedBase64(histogram)

/**
 * Merges encoded histograms into a new one.
 * @param {string[]} encoded
 */
export function merge (encoded) {
  const total = createHistogram()
  for (const item of encoded) {
    const part = hdr.decodeFromCompressedBase64(item)
    total.add(part)
    part.destroy()
  }
  return total
}

/**
 * Percentiles in milliseconds; null when nothing was recorded.
 * @param {Histogram} histogram
 * @returns {LatencySummary | null}
 */
export function summarize (histogram) {
  if (histogram.totalCount === 0) return null
  const ms = (/** @type {number} */ us) => us / 1000
  return {
    count: histogram.totalCount,
    p50: ms(histogram.getValueAtPercentile(50)),
    p90: ms(histogram.getValueAtPercentile(90)),
    p99: ms(histogram.getValueAtPercentile(99)),
    max: ms(histogram.maxValue),
    mean: ms(histogram.mean)
  }
}
