import { createHmac, timingSafeEqual } from 'node:crypto'

// Signed as Stripe signs: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`. The
// time is inside the MAC, so a receiver that refuses old timestamps refuses replays (docs/API.md, "Webhooks").

export const SIGNATURE_HEADER = 'tandem-signature'
export const EVENT_ID_HEADER = 'tandem-event-id'
export const EVENT_TYPE_HEADER = 'tandem-event-type'

/** @param {string} secret @param {string} body the exact bytes sent @param {number} seconds unix time */
export function signatureOf (secret, body, seconds) {
  const mac = createHmac('sha256', secret).update(`${seconds}.${body}`).digest('hex')
  return `t=${seconds},v1=${mac}`
}

/**
 * What a receiver does: true when `header` signs `body` with `secret` at a time within
 * `toleranceSeconds` of `nowSeconds`.
 * @param {string} secret @param {string | undefined | null} header @param {string} body
 * @param {{ toleranceSeconds?: number, nowSeconds?: number }} [options]
 */
export function verifySignature (secret, header, body, { toleranceSeconds = 300, nowSeconds = Math.floor(Date.now() / 1000) } = {}) {
  const fields = Object.fromEntries(String(header ?? '').split(',').map(field => field.split('=', 2)))
  const seconds = Number(fields.t)
  if (!Number.isInteger(seconds) || Math.abs(nowSeconds - seconds) > toleranceSeconds) return false
  const expected = Buffer.from(signatureOf(secret, body, seconds).split('v1=')[1], 'hex')
  const given = Buffer.from(String(fields.v1 ?? ''), 'hex')
  return given.length === expected.length && timingSafeEqual(given, expected)
}
