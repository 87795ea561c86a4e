// The wire contract shared by server/, client/ and loadtest/, as one entry (`tandem/protocol`):
// event names, error codes, ids, ACK shapes, limits and the Socket.IO parser both ends must use.
// Everything in isomorphic/ runs unchanged in browsers and in Node: eslint.config.js refuses Node
// built-ins and globals here, and test/isomorphic.test.js bundles the folder for the browser.
export * from './events.js'
export * from './error-codes.js'
export * from './ids.js'
export * from './awareness-user.js'
export { Decoder, Encoder, PARSER } from './parser.js'
