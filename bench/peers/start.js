import { fileURLToPath } from 'node:url'
import { now, sleepUntil } from '../../loadtest/clock.js'
import { freePort, startProcess } from '../../loadtest/spawn.js'
import { READY_PREFIX } from './servers/announce.js'

// Starts a peer server (servers/<name>.js) as a child process on a free loopback port and resolves
// once it prints that it is ready; `stop()` ends it. Its editors speak clients/<name>.js.

const READY_TIMEOUT_MS = 20000
const POLL_MS = 25

/** The peer servers, by the name of their script and of their client. */
export const PEERS = Object.freeze({
  hocuspocus: 'Hocuspocus (@hocuspocus/server, default settings)',
  'y-websocket': 'y-websocket server (@y/websocket-server setupWSConnection)',
  'socketio-relay': 'naive Socket.IO relay (no CRDT, no ACK)',
  'ws-relay': 'bare ws relay (forwards bytes)'
})

/** @typedef {keyof typeof PEERS} PeerName */

/**
 * @param {PeerName} name
 * @returns {Promise<{ url: string, description: string, pid: number, stop: () => Promise<void> }>}
 */
export async function startPeer (name) {
  if (!(name in PEERS)) throw new Error(`unknown peer ${JSON.stringify(name)}: expected one of ${Object.keys(PEERS).join(', ')}`)
  const script = fileURLToPath(new URL(`./servers/${name}.js`, import.meta.url))
  const child = startProcess(name, process.execPath, [script], { PORT: String(await freePort()) })
  const stop = () => child.stop('SIGTERM')
  const deadline = now() + READY_TIMEOUT_MS
  while (now() < deadline) {
    const line = child.output.split('\n').find(text => text.startsWith(READY_PREFIX))
    if (line && child.pid !== null) return { url: line.slice(READY_PREFIX.length).trim(), description: PEERS[name], pid: child.pid, stop }
    if (!child.running) throw new Error(`${name} exited before it was ready:\n${child.output}`)
    await sleepUntil(now() + POLL_MS)
  }
  await stop()
  throw new Error(`${name} was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${child.output}`)
}
