import * as Y from 'yjs'
import { TEXT_NAME } from '../isomorphic/events.js'
import { protocol } from '../loadtest/protocols/tandem.js'

// An editor of the micro-benchmarks: a load-test connection (loadtest/protocols/tandem.js, over the
// shipped client's socket and parser) joined to one document, and the Y.Doc it keeps in step with
// it. Its edits go out one at a time, each awaiting its ACK. Joining answers the server's state with
// the editor's diff, as every load-test editor does: for a fresh editor a 2-byte update with nothing
// in it, stored and acknowledged like any other.

const ACK_TIMEOUT_MS = 5000
const REMOTE = 'remote'

/**
 * Connects to `url` and joins `doc`; throws if either is refused.
 * @param {string} url
 * @param {string} doc
 * @param {string | null} [token] a join token, for a server with auth on
 */
export async function joinEditor (url, doc, token = null) {
  const ydoc = new Y.Doc()
  const connection = protocol.connect({
    url,
    room: doc,
    token,
    timeoutMs: ACK_TIMEOUT_MS,
    on: {
      update: update => Y.applyUpdate(ydoc, update, REMOTE),
      awareness: () => {},
      // A bench run fails on its next ACK instead.
      lost: () => {}
    }
  })
  const close = () => {
    connection.close()
    ydoc.destroy()
  }
  try {
    await connection.open()
    await connection.join(ydoc)
  } catch (err) {
    close()
    throw err
  }
  const text = ydoc.getText(TEXT_NAME)
  return {
    text,
    /**
     * Inserts `chars` at `index` and sends exactly that edit's update; resolves with its ACK.
     * @param {number} index
     * @param {string} chars
     */
    async insert (index, chars) {
      /** @type {Uint8Array[]} */
      const updates = []
      const collect = (/** @type {Uint8Array} */ update, /** @type {unknown} */ origin) => {
        if (origin !== REMOTE) updates.push(update)
      }
      ydoc.on('update', collect)
      text.insert(index, chars)
      ydoc.off('update', collect)
      return /** @type {Promise<import('../loadtest/protocols/index.js').Ack>} */ (connection.send(Y.mergeUpdates(updates)))
    },
    /** @param {Uint8Array} update a y-protocols awareness update */
    sendAwareness (update) {
      connection.sendAwareness?.(update)
    },
    close
  }
}
