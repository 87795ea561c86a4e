import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import * as Y from 'yjs'
import { EVENTS, TEXT_NAME } from '../isomorphic/events.js'
import { TestEditor } from './helpers/editor.js'
import { createSession, startServer } from './helpers/server.js'

// Random valid and invalid updates thrown at a real server, in random order: whatever it accepts or
// refuses, the document it stored must equal a reference Y.Doc built from exactly the accepted
// updates, in the order they were acknowledged.

const CLIENTS = 3

const operation = fc.oneof(
  fc.record({ kind: fc.constant('edit'), client: fc.nat(CLIENTS - 1), at: fc.nat(), text: fc.string({ maxLength: 6 }), remove: fc.nat(4) }),
  fc.record({ kind: fc.constant('garbage'), bytes: fc.uint8Array({ maxLength: 48 }) }),
  fc.record({ kind: fc.constant('truncated'), client: fc.nat(CLIENTS - 1), keep: fc.double({ min: 0, max: 0.99, noNaN: true }) }),
  fc.record({ kind: fc.constant('mutated'), client: fc.nat(CLIENTS - 1), at: fc.nat(), value: fc.nat(255) }),
  // An edit never sent: the client's next edits build on structs the server does not have.
  fc.record({ kind: fc.constant('withheld'), client: fc.nat(CLIENTS - 1) }),
  // What the shipped provider does after OUT_OF_SYNC: join, take the server's state, send the difference.
  fc.record({ kind: fc.constant('resync'), client: fc.nat(CLIENTS - 1) })
)

describe('property: the stored document equals the accepted updates', () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {TestEditor} */
  let wire

  before(async () => {
    tandem = await startServer({ updatesPerSecond: 0, bytesPerSecond: 0, joinsPerMinute: 0, maxInvalidUpdates: 0 })
    wire = new TestEditor(tandem.url)
    await wire.connected()
  })
  after(async () => {
    wire.close()
    await tandem.close()
  })

  it('holds for random sequences of valid, invalid and out-of-order updates', async () => {
    const outcomes = new Map()
    await fc.assert(fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 30 }), async (operations) => {
      const { id: doc } = await createSession(tandem.url)
      await wire.join(doc)
      const reference = new Y.Doc()
      const clients = Array.from({ length: CLIENTS }, (_, i) => {
        const ydoc = new Y.Doc()
        ydoc.clientID = 1000 + i
        return ydoc
      })

      /** @param {Uint8Array} update */
      const send = async (update) => {
        const reply = await wire.request(EVENTS.UPDATE, { doc, update })
        outcomes.set(reply.ok ? 'ok' : reply.error.code, (outcomes.get(reply.ok ? 'ok' : reply.error.code) ?? 0) + 1)
        if (reply.ok) Y.applyUpdate(reference, update)
        // After a refusal that reloaded the document, the wire joins again as any client would.
        if (wire.received.some(r => r.event === EVENTS.CLOSED && r.payload.doc === doc)) {
          wire.received.length = 0
          await wire.join(doc)
        }
      }

      for (const op of operations) {
        if (op.kind === 'garbage') {
          await send(op.bytes)
        } else if (op.kind === 'resync') {
          const ydoc = clients[op.client]
          const reply = await wire.request(EVENTS.JOIN, { doc, sv: Y.encodeStateVector(ydoc) })
          Y.applyUpdate(ydoc, reply.update)
          await send(Y.encodeStateAsUpdate(ydoc, reply.sv))
        } else {
          const update = edit(clients[op.client], op.kind === 'edit' ? op : {})
          if (op.kind === 'edit') await send(update)
          else if (op.kind === 'truncated') await send(update.slice(0, Math.floor(update.length * op.keep)))
          else if (op.kind === 'mutated') {
            const copy = update.slice()
            copy[op.at % copy.length] = op.value
            await send(copy)
          }
        }
      }

      const stored = new Y.Doc()
      for (const update of (await tandem.server.registry.store.load(doc)).updates) Y.applyUpdate(stored, update)
      assert.equal(stored.getText(TEXT_NAME).toString(), reference.getText(TEXT_NAME).toString())
      assert.deepEqual(Y.encodeStateVector(stored), Y.encodeStateVector(reference))
      assert.deepEqual(Y.encodeStateAsUpdate(stored), Y.encodeStateAsUpdate(reference))
      await wire.request(EVENTS.LEAVE, { doc })
    }), { numRuns: 100 })
    // The sequences did exercise both sides: accepted updates and every kind of refusal.
    for (const code of ['ok', 'INVALID_UPDATE', 'OUT_OF_SYNC']) assert.ok(outcomes.get(code) > 0, `${code} never happened: ${[...outcomes]}`)
  })
})

/**
 * Makes a random edit on `ydoc` and returns its update (empty if the edit changed nothing).
 * @param {Y.Doc} ydoc
 * @param {{ at?: number, text?: string, remove?: number }} op
 */
function edit (ydoc, { at = 0, text = 'x', remove = 0 }) {
  const ytext = ydoc.getText(TEXT_NAME)
  const before = Y.encodeStateVector(ydoc)
  ydoc.transact(() => {
    const index = at % (ytext.length + 1)
    if (remove > 0 && ytext.length > index) ytext.delete(index, Math.min(remove, ytext.length - index))
    ytext.insert(index, text || 'x')
  })
  return Y.encodeStateAsUpdate(ydoc, before)
}
