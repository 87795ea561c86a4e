// Hocuspocus with its default settings (no extensions, so documents live in memory only), on
// loopback. It handles SIGINT/SIGTERM itself (`stopOnSignals`, a default). A peer of the
// comparison (../run.js).
import { Server } from '@hocuspocus/server'
import { HOST, announce, portFromEnv } from './announce.js'

const server = new Server({ port: portFromEnv(), address: HOST })
await server.listen()
announce(server.webSocketURL)
