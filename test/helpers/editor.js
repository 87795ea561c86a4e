import { atEnd } from './at-end.js'
import * as encoding from 'lib0/encoding'
import { io } from 'socket.io-client'
import * as Y from 'yjs'
import { PARSER } from '../../isomorphic/parser.js'
import { EVENTS, TEXT_NAME } from '../../isomorphic/events.js'

const ACK_TIMEOUT_MS = 5000

/** @type {Set<TestEditor>} editors not closed yet */
const open = new Set()
// A test that fails before closing its editors would leave their sockets open, and the file would
// never finish (npm test does not force an exit): whatever is still open is closed at its end.
atEnd(() => { for (const editor of open) editor.close() })

/**
 * A minimal editor speaking docs/PROTOCOL.md over a real socket.io-client connection: one Y.Doc per
 * joined document, local edits sent with ACK, remote updates applied.
 */
export class TestEditor {
  /** @type {Map<string, Y.Doc>} */
  docs = new Map()
  /** @type {{ event: string, payload: any }[]} every server event received, in order */
  received = []
  /** @type {string | null} why the socket dropped, once it has and will not connect again by itself */
  #dropped = null

  /** @param {string} url @param {Partial<import('socket.io-client').ManagerOptions & import('socket.io-client').SocketOptions>} [options] */
  constructor (url, options = {}) {
    this.socket = io(url, { transports: ['websocket'], parser: PARSER, ...options, reconnection: options.reconnection ?? false })
    open.add(this)
    this.socket.on(EVENTS.UPDATE, ({ doc, update }) => {
      this.received.push({ event: EVENTS.UPDATE, payload: { doc, update } })
      const ydoc = this.docs.get(doc)
      if (ydoc) Y.applyUpdate(ydoc, update, 'remote')
    })
    this.socket.on(EVENTS.AWARENESS, (payload) => this.received.push({ event: EVENTS.AWARENESS, payload }))
    this.socket.on(EVENTS.CLOSED, (payload) => this.received.push({ event: EVENTS.CLOSED, payload }))
    this.socket.on('connect', () => { this.#dropped = null })
    this.socket.on('disconnect', (reason) => {
      // Without reconnection (the default here), a dropped socket stays down: its server stopped
      // or closed it, or the test did.
      if (!this.socket.active || !this.socket.io.reconnection()) this.#dropped = reason
    })
  }

  /** Resolves with the error of a refused connection (`err.data` carries the server's code). */
  connectError () {
    return new Promise(resolve => this.socket.once('connect_error', resolve))
  }

  /** Resolves once connected; rejects if the connection is refused or dropped for good. */
  connected () {
    if (this.socket.connected) return Promise.resolve()
    if (this.#dropped !== null) return Promise.reject(new Error(`disconnected (${this.#dropped})`))
    return new Promise((resolve, reject) => {
      this.socket.once('connect', () => resolve(undefined))
      this.socket.once('connect_error', reject)
    })
  }

  /**
   * @param {string} event
   * @param {unknown} payload
   */
  request (event, payload) {
    return this.socket.timeout(ACK_TIMEOUT_MS).emitWithAck(event, payload)
  }

  /**
   * Joins a document, applies what the server sends and returns the ACK. Broadcasts that arrive
   * before the ACK are applied too, as the shipped provider does.
   * @param {string} doc
   */
  async join (doc) {
    await this.connected()
    const known = this.docs.get(doc)
    const ydoc = known ?? new Y.Doc()
    this.docs.set(doc, ydoc)
    const reply = await this.request(EVENTS.JOIN, { doc, sv: Y.encodeStateVector(ydoc) })
    if (!reply.ok) {
      if (!known) this.docs.delete(doc)
      return reply
    }
    Y.applyUpdate(ydoc, reply.update, 'remote')
    return reply
  }

  /**
   * How a join ends, wherever it is refused (at the handshake or at the join): `joined`, or the
   * refusal's code and message.
   * @param {string} doc
   * @returns {Promise<{ code: string, message: string }>}
   */
  async joinOutcome (doc) {
    try {
      const reply = await this.join(doc)
      return reply.ok ? { code: 'joined', message: '' } : reply.error
    } catch (err) {
      return /** @type {{ data?: { code: string, message: string } }} */ (err).data ?? { code: 'error', message: String(err) }
    }
  }

  /** @param {string} doc */
  text (doc) {
    return this.ydoc(doc).getText(TEXT_NAME).toString()
  }

  /** @param {string} doc */
  ydoc (doc) {
    const ydoc = this.docs.get(doc)
    if (!ydoc) throw new Error(`not joined to ${doc}`)
    return ydoc
  }

  /**
   * Makes an edit locally and sends exactly its update; resolves with the server's ACK.
   * @param {string} doc
   * @param {(text: Y.Text) => void} change
   */
  async edit (doc, change) {
    const ydoc = this.ydoc(doc)
    /** @type {Uint8Array[]} */
    const updates = []
    const collect = (/** @type {Uint8Array} */ update, /** @type {unknown} */ origin) => {
      if (origin !== 'remote') updates.push(update)
    }
    ydoc.on('update', collect)
    ydoc.transact(() => change(ydoc.getText(TEXT_NAME)))
    ydoc.off('update', collect)
    return this.request(EVENTS.UPDATE, { doc, update: Y.mergeUpdates(updates) })
  }

  /** @param {string} doc @param {number} index @param {string} text */
  insert (doc, index, text) {
    return this.edit(doc, ytext => ytext.insert(index, text))
  }

  close () {
    open.delete(this)
    this.socket.disconnect()
    for (const ydoc of this.docs.values()) ydoc.destroy()
  }
}

/**
 * Editors opened on any server during a suite, closed together at its end.
 */
export function editorPool () {
  /** @type {TestEditor[]} */
  const editors = []
  return {
    /** @param {{ url: string }} server */
    on (server) {
      const editor = new TestEditor(server.url)
      editors.push(editor)
      return editor
    },
    closeAll () {
      for (const editor of editors) editor.close()
    }
  }
}

/**
 * One y-protocols awareness entry, as a client would send it.
 * @param {number} clientId @param {number} clock @param {unknown} state
 */
export function awarenessUpdate (clientId, clock, state) {
  return awarenessUpdates([[clientId, clock, state]])
}

/**
 * An awareness update of several entries. @param {[number, number, unknown][]} entries clientId, clock, state
 */
export function awarenessUpdates (entries) {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, entries.length)
  for (const [clientId, clock, state] of entries) {
    encoding.writeVarUint(encoder, clientId)
    encoding.writeVarUint(encoder, clock)
    encoding.writeVarString(encoder, JSON.stringify(state))
  }
  return encoding.toUint8Array(encoder)
}

/**
 * A `cursor` as y-codemirror.next publishes it: Yjs relative positions in the text, as JSON.
 * @param {Y.Doc} ydoc @param {number} anchor @param {number} [head]
 */
export function cursorIn (ydoc, anchor, head = anchor) {
  const at = (/** @type {number} */ index) => JSON.parse(JSON.stringify(Y.createRelativePositionFromTypeIndex(ydoc.getText(TEXT_NAME), index)))
  return { anchor: at(anchor), head: at(head) }
}

/**
 * Types tokens (`<0>`, `<1>`, …) at the end of `docId`, ten in flight, and kills the server with
 * SIGKILL the moment the `count`th is acknowledged: what a crash mid-burst leaves. Resolves with
 * the tokens acknowledged by then, in order, and how the server exited.
 * @param {TestEditor} editor joined to `docId` @param {string} docId
 * @param {{ stop: (signal: NodeJS.Signals) => Promise<{ code: number | null, signal: string | null }> }} server
 * @param {number} count
 */
export async function typeUntilKilled (editor, docId, server, count) {
  /** @type {string[]} */
  const acked = []
  let sent = 0
  const exit = await new Promise((resolve) => {
    const sendNext = () => {
      const token = `<${sent++}>`
      editor.insert(docId, editor.text(docId).length, token).then((reply) => {
        if (reply.ok) acked.push(token)
        if (acked.length === count) resolve(server.stop('SIGKILL'))
        else if (acked.length < count) sendNext()
      }, () => {})
    }
    for (let i = 0; i < 10; i++) sendNext()
  })
  return { acked, exit }
}
