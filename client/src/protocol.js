// What a client needs of the protocol besides the provider (`tandem/protocol`): event names, error
// codes with their HTTP status and whether to retry, limits, and the Socket.IO parser both ends
// must use. Browser-safe, like everything it re-exports (docs/PROTOCOL.md).
export * from '../../server/protocol.js'
export { Decoder, Encoder, PARSER } from '../../server/parser.js'
