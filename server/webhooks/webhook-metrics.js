import client from 'prom-client'

/** How a delivery ended: answered 2xx, dropped after its last attempt, or never stored (outbox full). */
export const DELIVERY_RESULTS = /** @type {const} */ (['delivered', 'gave_up', 'outbox_full'])
/** Why an attempt failed: a non-2xx answer, no answer within WEBHOOK_TIMEOUT_MS, or no connection. */
export const FAILURE_REASONS = /** @type {const} */ (['status', 'timeout', 'network'])

/**
 * The webhook series, on the server's registry.
 * @param {import('prom-client').Registry} registry @param {() => Promise<number>} depth the outbox's
 */
export function webhookMetrics (registry, depth) {
  const registers = [registry]
  const deliveries = new client.Counter({ name: 'tandem_webhook_deliveries_total', help: 'Webhook deliveries (one event to one URL) by how they ended', labelNames: ['result'], registers })
  const failures = new client.Counter({ name: 'tandem_webhook_failures_total', help: 'Webhook attempts that failed, by reason (each is retried until the last attempt)', labelNames: ['reason'], registers })
  for (const result of DELIVERY_RESULTS) deliveries.inc({ result }, 0)
  for (const reason of FAILURE_REASONS) failures.inc({ reason }, 0)
  new client.Gauge({ // eslint-disable-line no-new -- registered; read through its registry
    name: 'tandem_webhook_outbox_depth',
    help: 'Webhook deliveries in the outbox, due or waiting for a retry (with Redis, every process\'s)',
    registers,
    async collect () {
      // A store that cannot answer leaves the last value; its own health reports the outage.
      const held = await depth().catch(() => null)
      if (held !== null) this.set(held)
    }
  })
  return {
    /** @param {typeof DELIVERY_RESULTS[number]} result @param {number} [count] */
    ended: (result, count = 1) => deliveries.inc({ result }, count),
    /** @param {typeof FAILURE_REASONS[number]} reason */
    failed: reason => failures.inc({ reason })
  }
}

/** @typedef {ReturnType<typeof webhookMetrics>} WebhookMetrics */
