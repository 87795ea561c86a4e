import * as hdr from 'hdr-histogram-js'

// Latencies are recorded in microseconds in HDR histograms (3 significant digits), so percentiles of a
// level come from every sample of every worker merged, never from averages of averages. Workers send
// their histograms to the main thread in HDR's compressed encoding.

const HIGHEST_US = 10 * 60 * 1e6
// log2 of half the sub-buckets per power of two that 3 significant digits take (2,048).
const SUB_BUCKET_HALF_MAGNITUDE = 10

/** @typedef {import('hdr-histogram-js').Histogram} Histogram */
/** @typedef {{ count: number, p50: number, p90: number, p99: number, max: number, mean: number }} LatencySummary */

export function createHistogram () {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: HIGHEST_US, numberOfSignificantValueDigits: 3 })
}

/** @param {Histogram} histogram @param {number} ms */
export function recordMs (histogram, ms) {
  histogram.recordValue(microseconds(ms))
}

/** A latency as the histograms count it: whole microseconds, 1 to HIGHEST_US. @param {number} ms */
const microseconds = ms => Math.min(HIGHEST_US, Math.max(1, Math.round(ms * 1000)))

// HDR's slots at 3 significant digits from 1 µs, in its order: one per value below 2,048 µs, then
// 1,024 per power of two, each 2^b wide in bucket b (values 2^(b+10) to 2^(b+11)).
const SLOTS = (Math.floor(Math.log2(HIGHEST_US)) - SUB_BUCKET_HALF_MAGNITUDE + 2) << SUB_BUCKET_HALF_MAGNITUDE

/** The slot of a value in µs (1 to HIGHEST_US), with integer operations. @param {number} us */
function slotOf (us) {
  const bucket = Math.max(0, 31 - Math.clz32(us) - SUB_BUCKET_HALF_MAGNITUDE)
  return (bucket << SUB_BUCKET_HALF_MAGNITUDE) + (us >>> bucket)
}

/** The lowest value a slot holds, in µs, and how many it holds. @param {number} slot */
function valuesOf (slot) {
  const bucket = Math.max(0, (slot >>> SUB_BUCKET_HALF_MAGNITUDE) - 1)
  const width = 2 ** bucket
  return { lowest: (slot - (bucket << SUB_BUCKET_HALF_MAGNITUDE)) * width, width }
}

/**
 * Records latencies at a small part of HDR's own cost per value. HDR's `recordValue` finds a
 * value's slot with floating-point logarithms and powers, about 260 ns a value here against 5 for
 * this: paid twice per delivery (the level's histogram and the live line's), it took 11 % of a
 * load-generator thread's time in one document of 300 editors. Values are counted in HDR's slots,
 * found with integer operations, and handed to an HDR histogram when the level is read.
 */
export class LatencyRecorder {
  #counts = new Float64Array(SLOTS)
  /** counted since the last `takeRecent` */
  #recent = new Float64Array(SLOTS)
  #histogram = createHistogram()

  /** @param {number} ms */
  record (ms) {
    const slot = slotOf(microseconds(ms))
    this.#counts[slot]++
    this.#recent[slot]++
  }

  /** An HDR histogram of every value recorded. */
  histogram () {
    const counts = this.#counts
    for (let slot = 0; slot < SLOTS; slot++) {
      if (counts[slot] === 0) continue
      // HDR counts the slot's lowest value in the same slot.
      this.#histogram.recordValueWithCount(valuesOf(slot).lowest, counts[slot])
      counts[slot] = 0
    }
    return this.#histogram
  }

  /**
   * The values recorded since the last call, as the live line needs them: a few thousand numbers
   * at most, where an HDR histogram took milliseconds of the thread to fill and encode every second.
   * @returns {RecentSlots} [slot, count, slot, count, …]
   */
  takeRecent () {
    const recent = this.#recent
    /** @type {number[]} */
    const taken = []
    for (let slot = 0; slot < SLOTS; slot++) {
      if (recent[slot] === 0) continue
      taken.push(slot, recent[slot])
      recent[slot] = 0
    }
    return taken
  }
}

/** @typedef {number[]} RecentSlots */

/**
 * The p99 in milliseconds of several threads' recent values, HDR's way (the highest value of the
 * slot holding the 99th percentile); null when there are none.
 * @param {RecentSlots[]} parts
 */
export function recentP99Ms (parts) {
  const counts = new Float64Array(SLOTS)
  let total = 0
  for (const part of parts) {
    for (let i = 0; i < part.length; i += 2) {
      counts[part[i]] += part[i + 1]
      total += part[i + 1]
    }
  }
  if (total === 0) return null
  const wanted = Math.max(1, Math.floor(0.99 * total + 0.5))
  let seen = 0
  for (let slot = 0; slot < SLOTS; slot++) {
    seen += counts[slot]
    if (seen < wanted) continue
    const { lowest, width } = valuesOf(slot)
    return (lowest + width - 1) / 1000
  }
  return null
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
