import { DocumentChanges } from './document-changes.js'
import { announcingSeats } from './editor-seats.js'
import { eventOf, WEBHOOK_EVENTS } from './events.js'
import { webhookMetrics } from './webhook-metrics.js'
import { WebhookSender } from './webhook-sender.js'
/** @import { WebhookEventType } from './events.js' */

const FULL_LOG_INTERVAL_MS = 10_000

/**
 * Webhooks of one server: every event is stored in the outbox, one delivery per URL (WEBHOOK_URL and
 * the session's `webhookUrl`), before anything is sent; the sender delivers it beside the editing.
 * Without WEBHOOK_SECRET nothing is stored or sent.
 * @param {object} deps @param {import('../config.js').Config} deps.config
 * @param {import('../storage/backend.js').Backend} deps.backend its outbox, sessions and documents
 * @param {import('prom-client').Registry} deps.registry metrics @param {import('pino').Logger} deps.logger
 * @param {(docId: string) => import('../documents/live-doc.js').LiveDoc | undefined} deps.copyOf this process's copy of a document
 */
export function createWebhooks ({ config, backend: { outbox, sessionStore, docStore }, registry, logger, copyOf }) {
  const log = logger.child({ component: 'webhooks' })
  const enabled = config.webhookSecret !== ''
  const metrics = webhookMetrics(registry, () => outbox.depth())
  const sender = new WebhookSender({
    outbox,
    secret: config.webhookSecret,
    timeoutMs: config.webhookTimeoutMs,
    maxAttempts: config.webhookMaxAttempts,
    backoffMs: config.webhookBackoffMs,
    maxBackoffMs: config.webhookMaxBackoffMs,
    concurrency: config.webhookConcurrency,
    metrics,
    logger: log
  })
  // What a previous run left is sent again.
  if (enabled) sender.wake()

  /**
   * Resolves once stored (or dropped, logged and counted); never rejects.
   * @param {WebhookEventType} type @param {{ id: string, webhookUrl?: string | null }} session
   * @param {Record<string, unknown>} data
   */
  async function emit (type, session, data) {
    /** @type {string[]} */
    const urls = []
    for (const url of [config.webhookUrl, session.webhookUrl]) if (url && !urls.includes(url)) urls.push(url)
    if (!enabled || urls.length === 0) return
    const event = eventOf(type, session.id, data)
    const body = JSON.stringify(event)
    try {
      if (await outbox.add(urls.map(url => ({ event: event.id, type, url, body, attempts: 0 })))) {
        sender.wake()
        return
      }
      metrics.ended('outbox_full', urls.length)
      droppedWhileFull(event.id, type, session.id)
    } catch (err) {
      log.error({ err: /** @type {Error} */ (err).message, event: event.id, type, session: session.id }, 'webhook dropped: storing it failed')
    }
  }

  // A full outbox refuses every event until receivers answer again: a line per interval, with the count.
  let full = { loggedAt: -Infinity, dropped: 0 }
  /** @param {string} event @param {WebhookEventType} type @param {string} session */
  function droppedWhileFull (event, type, session) {
    full.dropped++
    if (Date.now() - full.loggedAt < FULL_LOG_INTERVAL_MS) return
    log.error({ event, type, session, dropped: full.dropped }, 'webhooks dropped: the outbox holds WEBHOOK_OUTBOX_MAX deliveries')
    full = { loggedAt: Date.now(), dropped: 0 }
  }

  /** The session's own URL too, while it exists. @param {WebhookEventType} type @param {string} id @param {Record<string, unknown>} data */
  async function emitFor (type, id, data) {
    const record = enabled ? await sessionStore.get(id).catch(() => undefined) : undefined
    await emit(type, record ?? { id }, data)
  }

  const changes = new DocumentChanges({
    windowMs: config.webhookDebounceMs,
    claimWindow: (name, ms) => outbox.claimWindow(name, ms),
    replaceMark: (name, value, ms) => outbox.replaceMark(name, value, ms),
    copyOf,
    store: docStore,
    announce: async (docId, state) => {
      // A deleted session's last edits are not news.
      const record = await sessionStore.get(docId)
      if (record) await emit(WEBHOOK_EVENTS.DOCUMENT_CHANGED, record, state)
    },
    logger: log
  })

  /** @type {Set<Promise<void>>} events of joins and leaves being stored: a close waits for them */
  const storing = new Set()
  /** @param {WebhookEventType} type @param {string} docId @param {import('../storage/seats.js').Holder} holder */
  const editorEvent = (type, docId, { user, role }) => {
    const stored = emitFor(type, docId, { user, role }).finally(() => storing.delete(stored))
    storing.add(stored)
  }

  return {
    enabled,
    emit,
    /** An edit of the document was applied in this process. @param {string} docId */
    documentChanged (docId) {
      if (enabled) changes.changed(docId)
    },
    /** @param {import('../storage/seats.js').Seats} seats @returns {import('../storage/seats.js').Seats} */
    announcingSeats (seats) {
      if (!enabled) return seats
      return announcingSeats(seats, {
        joined: (docId, holder) => editorEvent(WEBHOOK_EVENTS.EDITOR_JOINED, docId, holder),
        left: (docId, holder) => editorEvent(WEBHOOK_EVENTS.EDITOR_LEFT, docId, holder)
      })
    },
    /** Stops sending; what is not delivered stays in the outbox. Before storage closes. */
    async close () {
      await changes.close()
      await Promise.all(storing)
      await sender.close()
    }
  }
}

/** @typedef {ReturnType<typeof createWebhooks>} Webhooks */
