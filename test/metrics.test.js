import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EVENTS } from '../isomorphic/events.js'
import { createMetrics } from '../server/metrics.js'

/**
 * The samples of one metric as a scrape reads it.
 * @param {ReturnType<typeof createMetrics>} metrics
 * @param {string} name
 */
async function samplesOf (metrics, name) {
  const all = await metrics.registry.getMetricsAsJSON()
  return /** @type {{ values: { value: number, labels: Record<string, string | number>, metricName?: string }[] }} */ (all.find(metric => metric.name === name)).values
}

describe('metrics fed by the update path', () => {
  it('reports every update-time observation, with its sum and buckets, across batches and scrapes', async () => {
    const metrics = createMetrics({ worker: 'test' })
    // 2,500 observations: two full batches handed over as they fill, the rest by the scrape.
    for (let i = 0; i < 2500; i++) metrics.updateDuration.observe(i % 2 === 0 ? 0.0002 : 0.003)
    let samples = await samplesOf(metrics, 'tandem_update_duration_seconds')
    const value = (/** @type {string} */ metricName, /** @type {number | undefined} */ le) =>
      samples.find(sample => sample.metricName === metricName && sample.labels.le === le)?.value
    assert.equal(value('tandem_update_duration_seconds_count', undefined), 2500)
    assert.ok(Math.abs(/** @type {number} */ (value('tandem_update_duration_seconds_sum', undefined)) - (1250 * 0.0002 + 1250 * 0.003)) < 1e-9)
    assert.equal(value('tandem_update_duration_seconds_bucket', 0.00025), 1250)
    assert.equal(value('tandem_update_duration_seconds_bucket', 0.005), 2500)

    metrics.updateDuration.observe(0.0002)
    samples = await samplesOf(metrics, 'tandem_update_duration_seconds')
    assert.equal(value('tandem_update_duration_seconds_count', undefined), 2501)
  })

  it('reports counted updates, bytes and deliveries by event, and keeps counting after a scrape', async () => {
    const metrics = createMetrics({ worker: 'test' })
    for (let i = 0; i < 3; i++) {
      metrics.updatesApplied.inc()
      metrics.updateBytes.inc(40)
      metrics.deliveries[EVENTS.UPDATE].inc(4)
    }
    metrics.deliveries[EVENTS.AWARENESS].inc(2)
    const total = async (/** @type {string} */ name, /** @type {string | undefined} */ event) =>
      (await samplesOf(metrics, name)).find(sample => sample.labels.event === event)?.value
    assert.equal(await total('tandem_updates_applied_total', undefined), 3)
    assert.equal(await total('tandem_update_bytes_total', undefined), 120)
    assert.equal(await total('tandem_broadcast_deliveries_total', EVENTS.UPDATE), 12)
    assert.equal(await total('tandem_broadcast_deliveries_total', EVENTS.AWARENESS), 2)

    metrics.updatesApplied.inc()
    metrics.deliveries[EVENTS.UPDATE].inc(4)
    assert.equal(await total('tandem_updates_applied_total', undefined), 4)
    assert.equal(await total('tandem_broadcast_deliveries_total', EVENTS.UPDATE), 16)
  })
})
