// Event names of the naive Socket.IO relay (socketio-relay.js), shared with its client in
// ../clients/socketio-relay.js.
export const RELAY_EVENTS = Object.freeze({ JOIN: 'room:join', UPDATE: 'room:update' })
