// A naive Socket.IO relay, no CRDT: a client joins a room (`room:join`, acknowledged once joined),
// and each binary `room:update` it sends is relayed as is to the room's other sockets with
// `socket.to(room).emit`. Updates are NOT acknowledged, stored or applied anywhere: the server
// holds no document, so a late joiner gets nothing. The architecture of a first collaborative
// backend; a peer of the comparison (../run.js). Socket.IO's default server settings.
import { createServer } from 'node:http'
import { Server } from 'socket.io'
import { HOST, announce, closeOnSignals, portFromEnv } from './announce.js'
import { RELAY_EVENTS } from './relay-events.js'

const server = createServer()
const io = new Server(server)
io.on('connection', (socket) => {
  /** @type {string | null} */
  let room = null
  socket.on(RELAY_EVENTS.JOIN, (name, ack) => {
    if (typeof name !== 'string' || room !== null) return
    room = name
    socket.join(name)
    if (typeof ack === 'function') ack()
  })
  socket.on(RELAY_EVENTS.UPDATE, (update) => {
    if (room !== null) socket.to(room).emit(RELAY_EVENTS.UPDATE, update)
  })
})
server.listen(portFromEnv(), HOST, () => announce(`http://${HOST}:${/** @type {import('node:net').AddressInfo} */ (server.address()).port}`))
closeOnSignals(() => new Promise(resolve => io.close(() => resolve(undefined))))
