import { randomUUID } from 'node:crypto'

/** What a webhook can tell; `type` in every body and in the Tandem-Event-Type header. */
export const WEBHOOK_EVENTS = Object.freeze({
  SESSION_CREATED: 'session.created',
  SESSION_DELETED: 'session.deleted',
  DOCUMENT_CHANGED: 'document.changed',
  EDITOR_JOINED: 'editor.joined',
  EDITOR_LEFT: 'editor.left'
})

/** @typedef {typeof WEBHOOK_EVENTS[keyof typeof WEBHOOK_EVENTS]} WebhookEventType */

/**
 * @typedef {object} WebhookEvent the body of a webhook, the same in every attempt
 * @property {string} id unique per event: receivers deduplicate retries by it
 * @property {WebhookEventType} type
 * @property {string} createdAt ISO time the event happened
 * @property {string} session the session (and document) id
 * @property {Record<string, unknown>} data
 */

/** @param {WebhookEventType} type @param {string} session @param {Record<string, unknown>} data @returns {WebhookEvent} */
export function eventOf (type, session, data) {
  return { id: `evt_${randomUUID().replaceAll('-', '')}`, type, createdAt: new Date().toISOString(), session, data }
}
