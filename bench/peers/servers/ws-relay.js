// The floor: a bare `ws` relay that forwards each message, byte for byte, to the other sockets of
// the same room (the URL path names the room). No parsing, no document, no ACK: what the WebSocket
// transport alone costs. A peer of the comparison (../run.js).
import { createServer } from 'node:http'
import { WebSocket, WebSocketServer } from 'ws'
import { HOST, announce, closeOnSignals, portFromEnv } from './announce.js'

/** @type {Map<string, Set<WebSocket>>} room → its sockets */
const rooms = new Map()
const server = createServer()
const wss = new WebSocketServer({ server })
wss.on('connection', (ws, req) => {
  const name = req.url ?? '/'
  let room = rooms.get(name)
  if (!room) rooms.set(name, room = new Set())
  const members = room
  members.add(ws)
  ws.on('message', (data, isBinary) => {
    for (const peer of members) {
      if (peer !== ws && peer.readyState === WebSocket.OPEN) peer.send(data, { binary: isBinary })
    }
  })
  ws.on('close', () => {
    members.delete(ws)
    if (members.size === 0) rooms.delete(name)
  })
})
server.listen(portFromEnv(), HOST, () => announce(`ws://${HOST}:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`))
closeOnSignals(() => {
  for (const ws of wss.clients) ws.terminate()
  wss.close()
  server.close()
})
