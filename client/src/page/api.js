// The REST calls the page makes, same-origin with the server (docs/API.md, "REST API").

/**
 * @typedef {object} Session
 * @property {string} id
 * @property {string} name
 * @property {string} language
 * @property {number} maxEditors
 * @property {number} editors
 * @property {string} createdAt
 * @property {string} updatedAt
 * @property {boolean} webhook whether the session has a `webhookUrl` of its own
 */

export class ApiError extends Error {
  /** @param {number} status @param {string} code @param {string} message */
  constructor (status, code, message) {
    super(message)
    this.status = status
    this.code = code
  }
}

/**
 * @param {string} path
 * @param {{ method?: string, body?: unknown, token?: string }} [request] `token` is sent as a bearer credential
 */
async function call (path, { method = 'GET', body, token } = {}) {
  /** @type {Record<string, string>} */
  const headers = body === undefined ? {} : { 'content-type': 'application/json' }
  if (token) headers.authorization = `Bearer ${token}`
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const data = await res.json().catch(() => ({}))
  if (!res.ok) throw new ApiError(res.status, data.error?.code ?? 'INTERNAL', data.error?.message ?? res.statusText)
  return data
}

/** @param {string} [cursor] @returns {Promise<{ sessions: Session[], nextCursor: string | null }>} */
export function listSessions (cursor) {
  const query = new URLSearchParams({ limit: '20' })
  if (cursor) query.set('cursor', cursor)
  return call(`/api/sessions?${query}`)
}

/** @param {string} id @param {string} [token] a join token for the session @returns {Promise<Session>} */
export function getSession (id, token) {
  return call(`/api/sessions/${encodeURIComponent(id)}`, { token })
}

/** @param {{ name: string, language?: string }} fields @returns {Promise<Session>} */
export function createSession (fields) {
  return call('/api/sessions', { method: 'POST', body: fields })
}

/** @param {string} id @param {{ name?: string, language?: string }} fields @returns {Promise<Session>} */
export function updateSession (id, fields) {
  return call(`/api/sessions/${encodeURIComponent(id)}`, { method: 'PATCH', body: fields })
}

/** Steps a playback page reads at most: pages of `/history/updates` past it are left unread. */
const MAX_PLAYBACK_PAGES = 20

/**
 * Everything history holds of a session, to play back: the document when it starts and each step
 * since, oldest first (a folded minute is one step, by its editors together).
 * @param {string} id @param {string} [token]
 * @returns {Promise<{ state: Uint8Array, steps: import('./playback.js').Step[] }>}
 */
export async function historyUpdates (id, token) {
  const path = `/api/sessions/${encodeURIComponent(id)}`
  const { retainedFrom } = await call(`${path}/history`, { token })
  /** @type {import('./playback.js').Step[]} */
  const steps = []
  let state = new Uint8Array()
  /** @type {string | null} */
  let from = retainedFrom
  for (let page = 0; from !== null && page < MAX_PLAYBACK_PAGES; page++) {
    const read = await call(`${path}/history/updates?${new URLSearchParams({ from, limit: '5000' })}`, { token })
    if (page === 0) state = fromBase64(read.state)
    for (const step of read.steps) {
      steps.push({ at: Date.parse(step.at), by: step.minute ? step.editors.join(', ') || null : step.by, update: fromBase64(step.update) })
    }
    from = read.next
  }
  return { state, steps }
}

/** Brings the text of `at` back as a new edit. @param {string} id @param {string} at ISO time @param {string} [token] */
export function restoreText (id, at, token) {
  return call(`/api/sessions/${encodeURIComponent(id)}/restore`, { method: 'POST', body: { at }, token })
}

/** @param {string} text */
function fromBase64 (text) {
  return Uint8Array.from(atob(text), c => c.charCodeAt(0))
}

/** @returns {Promise<{ auth?: 'on' | 'off', version?: string }>} what `/api/health` says; `{}` if it cannot be read */
export function health () {
  return call('/api/health').catch(() => ({}))
}
