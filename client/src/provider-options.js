import { DOC_ID_PATTERN, isDocId } from '../../isomorphic/ids.js'

/**
 * @typedef {object} ProviderOptions
 * @property {import('./join-token.js').TokenSource} [token] the join token, or a function that
 *   fetches one from your backend. A function is called only once the server has refused a handshake
 *   or `doc:join` without a token (a server with auth off never asks), then for every handshake
 *   (`auth: { token }`) and every `doc:join`, and again after an UNAUTHORIZED refusal (then retried
 *   with backoff), so a session outlives each short-lived token. A string is always sent; one that
 *   expires stops the provider at its next reconnect. The handshake part is ignored with `socket`
 *   (that socket's own `token` applies).
 * @property {import('y-protocols/awareness').Awareness} [awareness] cursors and presence. Default: a new one on the document.
 * @property {boolean} [connect] join as soon as the provider exists. Default true.
 * @property {string[]} [transports] Engine.IO transports. Default `['websocket']`. Ignored with `socket`.
 * @property {import('./socket.js').TandemSocket} [socket] a connection shared with other providers (see `createSocket`). Default: one of its own.
 * @property {number} [ackTimeoutMs] how long to wait for an ACK before sending again, in ms. Default 10000.
 * @property {number} [retryDelayMs] first delay before retrying a retryable refusal, in ms; doubles per attempt. Default 500.
 * @property {number} [maxRetryDelayMs] cap on that delay, in ms. Default 30000.
 * @property {number} [missingGraceMs] how long the document may hold updates it cannot integrate (they
 *   build on one that has not arrived) before the provider rejoins to fetch what it lacks, in ms. Default 1000.
 */

export const DEFAULT_OPTIONS = Object.freeze({
  connect: true,
  transports: Object.freeze(['websocket']),
  // Well above the server's group-commit wait, so a slow disk does not cause needless resends.
  ackTimeoutMs: 10_000,
  retryDelayMs: 500,
  maxRetryDelayMs: 30_000,
  // An update that arrives before the one it builds on is normally followed by it within a turn or
  // two; one that stays missing for this long was lost on the way.
  missingGraceMs: 1000
})

/**
 * Merges the defaults, checks every value once and freezes the result; a bad value throws a
 * TypeError that names the option.
 * @param {string} serverUrl
 * @param {string} docId
 * @param {ProviderOptions} options
 */
export function providerOptions (serverUrl, docId, options) {
  if (typeof serverUrl !== 'string' || serverUrl === '') throw new TypeError('serverUrl must be a URL string')
  if (!isDocId(docId)) throw new TypeError(`docId must match ${DOC_ID_PATTERN}`)
  const merged = { ...DEFAULT_OPTIONS, ...options }
  for (const name of /** @type {const} */ (['ackTimeoutMs', 'retryDelayMs', 'maxRetryDelayMs', 'missingGraceMs'])) {
    const value = merged[name]
    if (!Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number of milliseconds`)
  }
  if (merged.maxRetryDelayMs < merged.retryDelayMs) throw new TypeError('maxRetryDelayMs must be at least retryDelayMs')
  if (!Array.isArray(merged.transports) || merged.transports.length === 0) throw new TypeError('transports must be a non-empty array')
  if (merged.token !== undefined && typeof merged.token !== 'string' && typeof merged.token !== 'function') {
    throw new TypeError('token must be a string or a function returning one')
  }
  return Object.freeze(merged)
}
