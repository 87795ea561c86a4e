// The wire protocol a simulated editor speaks: a module exporting `protocol`, a Protocol saying how
// to connect to one room of one kind of server, send a Yjs update and hear the others'. The editor
// (editor.js) stays the same whatever the protocol, so every server gets the same workload and the
// same measurement; only the bytes on the wire differ. The load test speaks Tandem's (tandem.js);
// a target names its module (target.js), and each generator thread imports it.

/**
 * @typedef {object} ConnectionHandlers
 * @property {(update: Uint8Array) => void} update a Yjs update relayed from the room (possibly the editor's own, echoed)
 * @property {(update: Uint8Array) => void} awareness a y-protocols awareness update
 * @property {(reason: 'closed' | 'disconnected') => void} lost the server closed the document, or the connection dropped
 */

/**
 * @typedef {object} ConnectOptions
 * @property {string} url the server, as its starter reports it
 * @property {string} room document id or room name
 * @property {string | null} token credentials, where the protocol carries any
 * @property {number} timeoutMs bound on connecting, joining and each ACK
 * @property {ConnectionHandlers} on
 */

/** @typedef {{ ok: true } | { ok: false, code: string }} Ack */

/**
 * @typedef {object} EditorConnection
 * @property {() => Promise<void>} open opens the transport; throws if it cannot
 * @property {(ydoc: import('yjs').Doc) => Promise<{ appliedAt: number }>} join joins the room and syncs `ydoc`
 *   both ways; `appliedAt` is when the server's state was applied (clock.js). Throws if refused.
 * @property {(update: Uint8Array) => Promise<Ack> | null} send sends one update: the ACK, rejecting
 *   after `timeoutMs`, or null when the protocol acknowledges nothing
 * @property {((update: Uint8Array) => void) | null} sendAwareness null when the protocol carries no presence here
 * @property {() => void} close
 */

/**
 * @typedef {object} Protocol
 * @property {string} name
 * @property {string | null} ack what an ACK means, or null when the protocol has none
 * @property {(options: ConnectOptions) => EditorConnection} connect
 */

export {}
