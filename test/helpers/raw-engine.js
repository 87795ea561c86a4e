import { once } from 'node:events'
import WebSocket from 'ws'

// Engine.IO spoken by hand, for frames no Socket.IO client would send: a connection that never
// sends a Socket.IO CONNECT, over WebSocket or long-polling.

const CLOSE_TIMEOUT_MS = 5000

/**
 * Opens a raw Engine.IO WebSocket and waits for the server's open packet.
 * @param {string} url the server's http:// URL
 */
export async function rawWebSocket (url) {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/socket.io/?EIO=4&transport=websocket`)
  await once(ws, 'message')
  return ws
}

/**
 * Resolves with how many ms the server took to close `ws`; rejects if it stays open.
 * @param {WebSocket} ws
 */
export function closedWithin (ws) {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve(0)
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the server kept the connection open')), CLOSE_TIMEOUT_MS)
    ws.once('close', () => {
      clearTimeout(timer)
      resolve(performance.now() - started)
    })
  })
}

/**
 * Opens a long-polling Engine.IO session and returns its id.
 * @param {string} url
 */
export async function pollingSession (url) {
  const res = await fetch(`${url}/socket.io/?EIO=4&transport=polling`)
  const body = await res.text()
  if (!body.startsWith('0')) throw new Error(`unexpected handshake ${body.slice(0, 80)}`)
  return /** @type {string} */ (JSON.parse(body.slice(1)).sid)
}

/**
 * Sends one binary message over long-polling (Engine.IO v4 carries it as `b` + base64).
 * @param {string} url @param {string} sid @param {Uint8Array} bytes
 */
export async function pollingSend (url, sid, bytes) {
  const res = await fetch(`${url}/socket.io/?EIO=4&transport=polling&sid=${sid}`, {
    method: 'POST',
    headers: { 'content-type': 'text/plain;charset=UTF-8' },
    body: `b${Buffer.from(bytes).toString('base64')}`
  })
  return res.status
}

/**
 * Whether the server still holds the long-polling session open: one it closed answers the next
 * poll with a close packet (`1`), or 400 once it has forgotten it.
 * @param {string} url @param {string} sid
 */
export async function pollingOpen (url, sid) {
  const controller = new AbortController()
  // An open session holds the GET until it has something to send: a quick answer is the verdict.
  const timer = setTimeout(() => controller.abort(), 500)
  try {
    const res = await fetch(`${url}/socket.io/?EIO=4&transport=polling&sid=${sid}`, { signal: controller.signal })
    const packets = (await res.text()).split('\x1e')
    return res.status === 200 && !packets.includes('1')
  } catch {
    return true
  } finally {
    clearTimeout(timer)
  }
}
