// The y-websocket server: @y/websocket-server's `setupWSConnection` behind an http server, as the
// package's own server.js wires it, in memory (no YPERSISTENCE). A peer of the comparison
// (../run.js). The document is named by the URL path.
import { createServer } from 'node:http'
import { setupWSConnection } from '@y/websocket-server/utils'
import { WebSocketServer } from 'ws'
import { HOST, announce, closeOnSignals, portFromEnv } from './announce.js'

const wss = new WebSocketServer({ noServer: true })
wss.on('connection', setupWSConnection)
const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('okay'))
server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, ws => wss.emit('connection', ws, req)))
server.listen(portFromEnv(), HOST, () => announce(`ws://${HOST}:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`))
closeOnSignals(() => {
  for (const ws of wss.clients) ws.terminate()
  server.close()
})
