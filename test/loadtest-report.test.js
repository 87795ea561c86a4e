import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { assessGenerator } from '../loadtest/generator-health.js'
import client from 'prom-client'
import { bucketDelta, buckets, max, quantile, samplesOf, sum } from '../loadtest/prometheus.js'
import { niceCeiling, renderChart } from '../loadtest/report/svg.js'
import { findKnee, sloFailures, verdict } from '../loadtest/verdict.js'

describe('load test metrics scrape', () => {
  /**
   * What a server of two workers serves as JSON after `n` rounds: prom-client's own registries,
   * aggregated as the cluster aggregates them.
   * @param {number} n
   */
  const scrapeAfter = async (n) => {
    const workers = await Promise.all(['0', '1'].map(async (worker, i) => {
      const registry = new client.Registry()
      registry.setDefaultLabels({ worker })
      const updates = new client.Histogram({ name: 'tandem_update_duration_seconds', help: 'x', buckets: [0.001, 0.01], registers: [registry] })
      const fast = i === 0 ? 50 : 40
      for (let k = 0; k < n * fast; k++) updates.observe(0.0005)
      for (let k = 0; k < n * (50 - fast); k++) updates.observe(0.005)
      new client.Counter({ name: 'process_cpu_seconds_total', help: 'x', registers: [registry] }).inc(n * (2 + i))
      new client.Gauge({ name: 'nodejs_eventloop_lag_p99_seconds', help: 'x', registers: [registry] }).set(i === 0 ? 0.012 : 0.031)
      if (i === 0) {
        const deliveries = new client.Counter({ name: 'tandem_broadcast_deliveries_total', help: 'x', labelNames: ['event'], registers: [registry] })
        deliveries.inc({ event: 'doc:update' }, 7)
        deliveries.inc({ event: 'doc:awareness' }, 5)
      }
      return registry.getMetricsAsJSON()
    }))
    // Through JSON, as it travels.
    return JSON.parse(JSON.stringify(await client.AggregatorRegistry.aggregate(workers).getMetricsAsJSON()))
  }

  it('sums series across workers and takes the worst for gauges', async () => {
    const samples = samplesOf(await scrapeAfter(1))
    assert.equal(sum(samples, 'process_cpu_seconds_total'), 5)
    assert.equal(sum(samples, 'tandem_broadcast_deliveries_total', { event: 'doc:update' }), 7)
    assert.equal(max(samples, 'nodejs_eventloop_lag_p99_seconds'), 0.031)
    assert.deepEqual(buckets(samples, 'tandem_update_duration_seconds'), [{ le: 0.001, count: 90 }, { le: 0.01, count: 100 }, { le: Infinity, count: 100 }])
  })

  it('estimates quantiles from the bucket counts observed between two scrapes', async () => {
    const name = 'tandem_update_duration_seconds'
    const delta = bucketDelta(buckets(samplesOf(await scrapeAfter(1)), name), buckets(samplesOf(await scrapeAfter(3)), name))
    assert.deepEqual(delta.map(b => b.count), [180, 200, 200])
    assert.ok(Math.abs(/** @type {number} */ (quantile(delta, 0.45)) - 0.0005) < 1e-12)
    assert.ok(Math.abs(/** @type {number} */ (quantile(delta, 0.95)) - 0.0055) < 1e-12)
    assert.equal(quantile([{ le: 0.1, count: 0 }, { le: Infinity, count: 0 }], 0.5), null)
    assert.equal(quantile([{ le: 0.1, count: 0 }, { le: Infinity, count: 4 }], 0.5), 0.1)
  })
})

/** A level result with only what the verdict reads. @param {number} editors @param {number} ackP99 @param {number} broadcastP99 */
function level (editors, ackP99, broadcastP99, { lost = 0, converged = /** @type {boolean | null} */ (true), bottleneck = false, disturbed = false } = {}) {
  return /** @type {any} */ ({
    editors,
    connect: { failed: 0 },
    ackMs: { p50: ackP99 / 3, p99: ackP99 },
    broadcast: { expected: 10, received: 10 - lost, lost, latencyMs: { p50: broadcastP99 / 3, p99: broadcastP99 } },
    updates: { timedOut: 0, refused: 0 },
    disconnects: 0,
    convergence: { converged, diverged: converged ? 0 : 1, rooms: 2 },
    generator: { bottleneck, disturbed }
  })
}

describe('load test verdict', () => {
  const slo = { ackP99Ms: 50, broadcastP99Ms: 100 }

  it('names every SLO a level misses', () => {
    assert.deepEqual(sloFailures(level(10, 4, 6), slo), [])
    assert.deepEqual(sloFailures(level(10, 60, 120, { lost: 2, converged: false }), slo),
      ['ACK p99 60.0 ms > 50 ms', 'broadcast p99 120.0 ms > 100 ms', '2 broadcasts lost', '1 of 2 documents diverged'])
  })

  it('does not fail a level whose convergence was not checked (editors that apply nothing)', () => {
    assert.deepEqual(sloFailures(level(10, 4, 6, { converged: null }), slo), [])
  })

  it('gives the largest level below the first failure as the capacity', () => {
    const result = verdict([level(10, 3, 5), level(25, 4, 6), level(50, 20, 30), level(100, 70, 90), level(150, 40, 60)], slo)
    assert.equal(result.capacity, 50)
    assert.equal(result.firstFailure?.editors, 100)
    assert.match(result.summary, /Capacity: 50 editors/)
    assert.match(result.summary, /100 editors did not: ACK p99 70\.0 ms > 50 ms/)
    assert.equal(verdict([level(10, 60, 5)], slo).capacity, null)
  })

  it('calls the capacity a lower bound when even the highest level tried met the SLOs', () => {
    const result = verdict([level(10, 3, 5), level(20, 4, 6)], slo)
    assert.equal(result.capacity, 20)
    assert.equal(result.capacityIsLowerBound, true)
    assert.match(result.summary, /^Capacity: ≥ 20 editors \(highest tried\)/)
    assert.doesNotMatch(result.summary, /Capacity: 20 editors/)
    assert.equal(verdict([level(10, 3, 5), level(20, 70, 6)], slo).capacityIsLowerBound, false)
  })

  it('says tail latency grows only where p99 rose', () => {
    assert.match(verdict([level(10, 3, 5), level(20, 4, 6)], slo).summary, /Tail latency grows without a knee/)
    const fell = verdict([level(10, 9, 12), level(20, 6, 8), level(40, 5, 9)], slo)
    assert.doesNotMatch(fell.summary, /grows/)
    assert.match(fell.summary, /No knee in tail latency over the levels tested \(p99 did not rise with the load\)/)
  })

  it('flags levels where the load generator was the bottleneck', () => {
    const result = verdict([level(10, 3, 5), level(150, 30, 40, { bottleneck: true })], slo)
    assert.deepEqual(result.generatorLimited, [150])
    assert.match(result.summary, /At 150 editors the load generator/)
    const noisy = verdict([level(10, 300, 5, { disturbed: true }), level(25, 4, 6)], slo)
    assert.deepEqual(noisy.disturbed, [10])
    assert.match(noisy.summary, /At 10 editors something else on the machine took the CPU/)
  })

  it('finds where tail latency turns non-linear', () => {
    const points = (/** @type {number[]} */ p99s) => p99s.map((p99, i) => ({ editors: [10, 25, 50, 100, 150][i], p99 }))
    assert.equal(findKnee(points([2, 3, 4, 6, 8])), null, 'linear growth')
    assert.equal(findKnee(points([2, 3, 4, 30, 200])), 100)
    assert.equal(findKnee(points([0.5, 1.5, 3, 4, 4.9])), null, 'jumps under the noise floor')
    assert.equal(findKnee(points([3, 40])), 25, 'against proportional growth from one level')
  })
})

describe('load test generator health', () => {
  const healthy = { eventLoopUtilization: 0.4, scheduleLagP99Ms: 3, editIntervalMs: 200, achievedRate: 5, targetRate: 5, traceFinished: false, generatorCpuPercent: 40, serverCpuPercent: 50, cores: 2 }

  it('blames the generator when it is busy, late or short of the rate while it has the CPU', () => {
    assert.deepEqual(assessGenerator(healthy), { bottleneck: false, disturbed: false, warnings: [] })
    const saturated = assessGenerator({ ...healthy, eventLoopUtilization: 0.9, generatorCpuPercent: 96 })
    assert.equal(saturated.bottleneck, true)
    assert.match(saturated.warnings[0], /busy 90% .*could not keep up/)
    assert.equal(assessGenerator({ ...healthy, eventLoopUtilization: 0.6, scheduleLagP99Ms: 120 }).bottleneck, true)
    assert.equal(assessGenerator({ ...healthy, eventLoopUtilization: 0.6, achievedRate: 4 }).bottleneck, true)
    assert.equal(assessGenerator({ ...healthy, eventLoopUtilization: 0.6, achievedRate: 4, traceFinished: true }).bottleneck, false)
  })

  it('blames the machine when edits leave late while the generator is idle or starved of CPU', () => {
    for (const input of [{ eventLoopUtilization: 0.18, generatorCpuPercent: 14 }, { eventLoopUtilization: 0.53, generatorCpuPercent: 20 }]) {
      const stalled = assessGenerator({ ...healthy, ...input, scheduleLagP99Ms: 130 })
      assert.equal(stalled.bottleneck, false)
      assert.equal(stalled.disturbed, true)
      assert.match(stalled.warnings[0], /something else on the machine took the CPU/)
    }
  })

  it('warns when server and generator saturate the cores together', () => {
    const shared = assessGenerator({ ...healthy, generatorCpuPercent: 90, serverCpuPercent: 95 })
    assert.equal(shared.bottleneck, false)
    assert.match(shared.warnings[0], /saturate the 2 cores/)
  })
})

describe('load test chart', () => {
  it('draws p50 and p99 of ACK and broadcast latency against editors', () => {
    const svg = renderChart([level(50, 9, 12), level(10, 3, 6), level(25, 4, 8)], 'Tandem <test>')
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
    assert.match(svg, /Tandem &lt;test&gt;/)
    for (const series of ['ACK p50', 'ACK p99', 'broadcast p50', 'broadcast p99']) {
      const line = svg.match(new RegExp(`<polyline data-series="${series}"[^>]* points="([^"]+)"`))
      assert.ok(line, series)
      const xs = line[1].split(' ').map(point => Number(point.split(',')[0]))
      assert.equal(xs.length, 3)
      assert.deepEqual(xs, [...xs].sort((a, b) => a - b), 'points ordered by editors')
    }
    assert.equal(svg.match(/<circle /g)?.length, 12)
    assert.equal(niceCeiling(13), 20)
    assert.equal(niceCeiling(0.3), 0.5)
    assert.equal(niceCeiling(100), 100)
  })

  it('draws each SLO as a horizontal line, within the scale', () => {
    const svg = renderChart([level(10, 3, 6), level(25, 4, 8)], 'with SLOs', { ackP99Ms: 50, broadcastP99Ms: 100 })
    const lines = [...svg.matchAll(/<line data-slo="([^"]+)" x1="[\d.]+" x2="[\d.]+" y1="([\d.]+)" y2="([\d.]+)"/g)]
    assert.deepEqual(lines.map(([, label]) => label), ['ACK p99 SLO 50 ms', 'broadcast p99 SLO 100 ms'])
    // Plot area: y from 40 (the scale's top, 100 ms here) to 350 (0 ms).
    const [ack, broadcast] = lines.map(([, , y1, y2]) => { assert.equal(y1, y2); return Number(y1) })
    assert.equal(broadcast, 40)
    assert.equal(ack, 195)
    assert.match(svg, />ACK p99 SLO 50 ms<\/text>/)
    assert.doesNotMatch(renderChart([level(10, 3, 6)], 'without'), /data-slo/)
  })

  it('leaves a series out when it has no values', () => {
    const svg = renderChart([{ editors: 1, ackMs: { p50: 1, p99: 2 }, broadcast: { latencyMs: null } }], 'one editor')
    assert.doesNotMatch(svg, /data-series="broadcast/)
    assert.match(svg, /data-series="ACK p99"/)
  })
})
