// The browser client's public surface: a Yjs provider for Tandem documents, and the connection it
// can share between several of them.
export { SocketIOProvider, STATUS } from './provider.js'
export { createSocket } from './socket.js'
