// The one interface every webhook outbox implements (level-outbox.js, redis-outbox.js): deliveries
// are stored before anything is sent, and leave only once answered 2xx or given up on, so a
// delivery outlives a restart or a kill -9 of the process sending it.

/**
 * @typedef {object} Delivery one event for one URL
 * @property {string} event the event's id
 * @property {string} type the event's type
 * @property {string} url
 * @property {string} body the JSON sent, the same in every attempt
 * @property {number} attempts made so far
 */

/** @typedef {Delivery & { key: string }} TakenDelivery a delivery this process holds; `key` is where the store keeps it */

/**
 * @typedef {object} Outbox
 * @property {(deliveries: Delivery[]) => Promise<boolean>} add stores them all, or none (false) when the outbox holds its maximum
 * @property {(max: number) => Promise<TakenDelivery[]>} take up to `max` deliveries due now, held by this process
 *   until removed, retried or released (or, with Redis, until a process that died holding them is taken over)
 * @property {(taken: TakenDelivery) => Promise<void>} remove delivered, or given up on
 * @property {(taken: TakenDelivery, dueAtMs: number) => Promise<void>} retry due again at `dueAtMs`, one more attempt counted
 * @property {(taken: TakenDelivery) => Promise<void>} release back to the outbox as it was (shutdown)
 * @property {() => Promise<number>} depth deliveries held, due or not
 * @property {(name: string, ms: number) => Promise<number>} claimWindow 0 if this process claimed the window `name` for
 *   `ms` (one per window across processes), else the ms until it can be claimed
 * @property {(name: string, value: string, ms: number) => Promise<string | null>} replaceMark keeps `value` under
 *   `name` for `ms` (every process sees it) and returns the value it replaced
 */

export {}
