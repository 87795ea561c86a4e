import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EditorStats } from '../loadtest/editor-stats.js'
import { assessGenerator } from '../loadtest/generator-health.js'
import { recordMs } from '../loadtest/histogram.js'
import { summarizeLevel } from '../loadtest/level-result.js'
import { describeMachine } from '../loadtest/machine.js'
import { parseOptions } from '../loadtest/options.js'
import { roomSizesOf } from '../loadtest/plan.js'
import { renderMarkdown } from '../loadtest/report/markdown.js'
import { tableAfter } from './helpers/markdown.js'
import { settingsOf } from '../loadtest/run.js'
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
  const healthy = { eventLoopUtilization: 0.4, scheduleLagP99Ms: 3, editIntervalMs: 200, achievedRate: 5, targetRate: 5, traceFinished: false, generatorCpuPercent: 40, serverCpuPercent: 50, cores: 2, sharesMachine: true }

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

  it('blames the generator when it used all the CPU it can have, however idle its threads look', () => {
    // As at 600 editors in rooms of 5 on two cores: two threads half busy, the process at 99 %.
    const saturated = assessGenerator({ ...healthy, eventLoopUtilization: 0.5, generatorCpuPercent: 99, serverCpuPercent: 67 })
    assert.equal(saturated.bottleneck, true)
    assert.equal(saturated.disturbed, false)
    assert.match(saturated.warnings[0], /the generator used 99% CPU, of the 2 cores, half of which .*: these figures measure the generator, not the server/)
    // The same CPU is half of what it can have with the server on another machine.
    assert.equal(assessGenerator({ ...healthy, eventLoopUtilization: 0.5, generatorCpuPercent: 99, sharesMachine: false }).bottleneck, false)
  })
})

const options = parseOptions(['--editors', '10', '--duration', '2s'])

/**
 * The report of one level of 10 editors in rooms of 5, as two generator threads measured it, with
 * the generator process at `cpuPercent` on two cores it shares with the server.
 * @param {number} cpuPercent
 * @param {import('../loadtest/rest.js').RestResult[] | null} [rest] its REST section
 */
function reportAt (cpuPercent, rest = null) {
  const parts = [0, 1].map(() => {
    const stats = new EditorStats()
    for (let editor = 0; editor < 5; editor++) {
      recordMs(stats.connect, 2)
      recordMs(stats.join, 3)
      recordMs(stats.synced, 5)
      for (let edit = 0; edit < 10; edit++) {
        stats.sent++
        stats.acked++
        stats.recordAck(1.5)
        recordMs(stats.scheduleLag, 0.5)
        for (let other = 0; other < 4; other++) stats.recordBroadcast(2.5)
      }
    }
    return { ...stats.toMessage(), eventLoopUtilization: 0.5, traceFinished: 0, traceReplayed: 0 }
  })
  const result = summarizeLevel({
    options,
    editors: 10,
    roomSizes: roomSizesOf(10, 5),
    threads: 2,
    rampMs: 200,
    joined: 10,
    joinFailures: {},
    expected: 400,
    parts,
    windowMs: options.durationMs,
    cpuPercent,
    server: null,
    convergence: { converged: true, rooms: 2, diverged: 0, editors: 2 },
    cores: 2
  })
  const slo = { ackP99Ms: options.sloAckP99Ms, broadcastP99Ms: options.sloBroadcastP99Ms }
  const failures = sloFailures(result, slo)
  const levels = [{ ...result, slo: { pass: failures.length === 0, failures } }]
  return /** @type {import('../loadtest/run.js').Report} */ ({
    tool: 'tandem-loadtest',
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:01:00.000Z',
    machine: describeMachine(),
    target: { url: options.url[0], mode: 'external', description: 'server at --url', urls: options.url, processes: [], spread: null },
    server: { version: '0.1.0', commit: null, storage: 'leveldb', syncWrites: false, workers: 1 },
    settings: settingsOf(options, ['--editors', '10', '--duration', '2s']),
    trace: null,
    levels,
    soak: null,
    rest,
    verdict: verdict(levels, slo)
  })
}

describe('load test report of a level whose generator used all its CPU', () => {
  it('says that its figures measure the generator, not the server, beside the level and in the verdict', () => {
    const markdown = renderMarkdown(reportAt(99))
    assert.match(markdown, /^- 10 editors: the generator used 99% CPU, .*these figures measure the generator, not the server/m)
    assert.match(markdown, /\*\*Verdict\.\*\* .*At 10 editors the load generator, not the server, was the bottleneck/)
    const spare = renderMarkdown(reportAt(60))
    assert.doesNotMatch(spare, /measure the generator|was the bottleneck/)
  })
})

describe('load test report of the REST section', () => {
  it('shows an endpoint it skipped as such, its figures as dashes, and says why', () => {
    const measured = { endpoint: 'PUT /api/sessions/:id/content', skipped: null, requests: 5000, requestsPerSecond: 1000, latencyMs: { p50: 9, p90: 12, p99: 20, max: 31 }, errors: 0, non2xx: 0 }
    const why = 'a first request answered 410 HISTORY_GONE: this server keeps no history (HISTORY_RETENTION=0)'
    const skipped = { endpoint: 'GET /api/sessions/:id/content?at=', skipped: why, requests: null, requestsPerSecond: null, latencyMs: null, errors: null, non2xx: null }
    const markdown = renderMarkdown(reportAt(60, [measured, skipped]))
    assert.deepEqual(tableAfter(markdown, '## REST'), [
      ['`PUT /api/sessions/:id/content`', '5000', '1000', '9', '12', '20', '31', '0', '0'],
      ['`GET /api/sessions/:id/content?at=`', 'skipped', '–', '–', '–', '–', '–', '–', '–']
    ])
    assert.ok(markdown.includes(`\`GET /api/sessions/:id/content?at=\` was not measured: ${why}.`))
    assert.doesNotMatch(renderMarkdown(reportAt(60, [measured])), /was not measured/)
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
