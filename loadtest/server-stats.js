import { EVENTS } from '../isomorphic/events.js'
import { now } from './clock.js'
import { bucketDelta, buckets, max, quantile, samplesOf, sum } from './prometheus.js'

// The server's side of a level, from /metrics scraped when the measured window opens and when it
// closes. Counters and histograms are differenced between the two scrapes; the event-loop lag
// percentiles need no difference because prom-client resets its lag histogram at every scrape.
// Sums run across every series, so a cluster's per-worker series add up to the whole server.

const UPDATE_DURATION = 'tandem_update_duration_seconds'
const MB = 1024 * 1024

/** @typedef {{ at: number, samples: import('./prometheus.js').Sample[] }} Scrape */

/**
 * @param {import('./api.js').TandemApi} api
 * @returns {Promise<Scrape | null>} null when the server has no /metrics
 */
export async function scrape (api) {
  const metrics = await api.metrics()
  return metrics === null ? null : { at: now(), samples: samplesOf(metrics) }
}

/**
 * @param {Scrape | null} before
 * @param {Scrape | null} after
 */
export function serverStats (before, after) {
  if (!before || !after) return null
  const seconds = (after.at - before.at) / 1000
  const delta = (/** @type {string} */ name, where = {}) => sum(after.samples, name, where) - sum(before.samples, name, where)
  const updates = bucketDelta(buckets(before.samples, UPDATE_DURATION), buckets(after.samples, UPDATE_DURATION))
  const count = delta(`${UPDATE_DURATION}_count`)
  const ms = (/** @type {number | null} */ s) => s === null ? null : s * 1000
  return {
    updates: count,
    updateMs: {
      p50: ms(quantile(updates, 0.5)),
      p99: ms(quantile(updates, 0.99)),
      mean: count > 0 ? delta(`${UPDATE_DURATION}_sum`) / count * 1000 : null
    },
    eventLoopLagMs: {
      p99: ms(max(after.samples, 'nodejs_eventloop_lag_p99_seconds')),
      max: ms(max(after.samples, 'nodejs_eventloop_lag_max_seconds'))
    },
    cpuPercent: delta('process_cpu_seconds_total') / seconds * 100,
    rssMB: sum(after.samples, 'process_resident_memory_bytes') / MB,
    deliveriesPerSecond: delta('tandem_broadcast_deliveries_total', { event: EVENTS.UPDATE }) / seconds
  }
}

/** @typedef {NonNullable<ReturnType<typeof serverStats>>} ServerStats */
