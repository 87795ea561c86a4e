import client from 'prom-client'
import { EVENTS } from '../isomorphic/events.js'

/**
 * On its own registry, so several servers can share a process (tests).
 * @param {{ worker: string }} options labels every series, so a cluster-wide scrape tells workers apart
 */
export function createMetrics ({ worker }) {
  const registry = new client.Registry()
  registry.setDefaultLabels({ worker })
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 })
  const registers = [registry]

  return {
    registry,
    updatesApplied: countedOnRead({ name: 'tandem_updates_applied_total', help: 'Yjs updates applied and acknowledged', registers }),
    updateBytes: countedOnRead({ name: 'tandem_update_bytes_total', help: 'Bytes of Yjs updates applied', registers }),
    updateDuration: observedInBatches({
      name: 'tandem_update_duration_seconds',
      help: 'Server-side update processing: received, validated, applied, persisted, acknowledged',
      // Fine at the bottom: an in-memory apply and a local write take well under a millisecond.
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers
    }),
    deliveries: countedOnReadBy({ name: 'tandem_broadcast_deliveries_total', help: 'Updates and awareness messages relayed to the other editors of the room connected to the same worker', registers },
      'event', [EVENTS.UPDATE, EVENTS.AWARENESS]),
    refusals: new client.Counter({ name: 'tandem_refusals_total', help: 'Requests and events refused, by error code', labelNames: ['code', 'event'], registers }),
    docLoadDuration: new client.Histogram({
      name: 'tandem_document_load_duration_seconds',
      help: 'Time to load a document from storage',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers
    }),
    storageErrors: new client.Counter({ name: 'tandem_storage_errors_total', help: 'Storage writes that failed (each one refused its updates with UNAVAILABLE)', registers }),
    compactions: new client.Counter({ name: 'tandem_compactions_total', help: 'Update logs compacted into a snapshot', registers }),
    mergedUpdates: new client.Histogram({
      name: 'tandem_broadcast_merged_updates',
      help: 'Updates merged into one broadcast while a room was busy (a quiet room sends each at once)',
      buckets: [2, 4, 8, 16, 32, 64, 128],
      registers
    }),
    slowConsumers: new client.Counter({ name: 'tandem_slow_consumers_dropped_total', help: 'Connections dropped for not reading what was sent to them', registers })
  }
}

// The update path's metrics keep plain numbers, handed to prom-client when a scrape reads them: its
// own `inc` and `observe` check, hash labels and look the series up on every call
// (docs/PERFORMANCE.md, "The update path's metrics").

/** What the hot path adds to, until the next scrape moves it into its counter. */
class Tally {
  pending = 0
  /** @param {number} [amount] */
  inc (amount = 1) {
    this.pending += amount
  }
}

/** @param {{ name: string, help: string, registers: client.Registry[] }} config @returns {Tally} */
function countedOnRead (config) {
  const tally = new Tally()
  new client.Counter({ // eslint-disable-line no-new -- registered; read through its registry
    ...config,
    collect () {
      this.inc(tally.pending)
      tally.pending = 0
    }
  })
  return tally
}

/**
 * One tally per value of `label`, each exported from the start.
 * @template {string} V @param {{ name: string, help: string, registers: client.Registry[] }} config
 * @param {string} label @param {readonly V[]} values
 */
function countedOnReadBy (config, label, values) {
  const tallies = values.map(() => new Tally())
  new client.Counter({ // eslint-disable-line no-new -- registered; read through its registry
    ...config,
    labelNames: [label],
    collect () {
      values.forEach((value, i) => {
        this.inc({ [label]: value }, tallies[i].pending)
        tallies[i].pending = 0
      })
    }
  })
  return /** @type {Record<V, Tally>} */ (Object.fromEntries(values.map((value, i) => [value, tallies[i]])))
}

const OBSERVATION_BATCH = 1024

/**
 * Observations held in a typed array, handed to prom-client when read or when the array is full.
 * @param {{ name: string, help: string, buckets: number[], registers: client.Registry[] }} config
 * @returns {{ observe: (value: number) => void }}
 */
function observedInBatches (config) {
  const held = new Float64Array(OBSERVATION_BATCH)
  let count = 0
  const handOver = () => {
    // Emptied first: an observation prom-client refuses must not leave the array full for good.
    const handed = count
    count = 0
    for (let i = 0; i < handed; i++) histogram.observe(held[i])
  }
  const histogram = new client.Histogram({ ...config, collect: handOver })
  return {
    observe (value) {
      held[count++] = value
      if (count >= OBSERVATION_BATCH) handOver()
    }
  }
}

/**
 * Read at scrape time, so they cannot drift from the state they describe. @param {Metrics} metrics
 * @param {{ connections: () => number, documents: () => number, editors: () => number }} read
 */
export function registerGauges ({ registry }, read) {
  const registers = [registry]
  /** @param {string} name @param {string} help @param {() => number} value */
  const sampled = (name, help, value) => new client.Gauge({ name, help, registers, collect () { this.set(value()) } })
  sampled('tandem_connections', 'Open Socket.IO connections', read.connections)
  sampled('tandem_documents_loaded', 'Documents held in memory', read.documents)
  sampled('tandem_editors', 'Editors joined to loaded documents', read.editors)
}

/** @typedef {ReturnType<typeof createMetrics>} Metrics */
