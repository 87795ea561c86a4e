// What a Yjs transaction costs by the clients a document holds edits from, the figures behind
// MAX_DOC_CLIENTS: each transaction builds a state vector of every client, once when it starts and
// once when it ends, so each update applied to the document pays for all of them. Each document
// here holds one character from each of its clients; the time is that of an empty transaction.
import * as Y from 'yjs'
import { TEXT_NAME } from '../isomorphic/events.js'

const CLIENTS = [10, 1000, 10_000, 20_000]
const MERGED = 5000
const TRANSACTIONS = 50
const ROUNDS = 5

/** A document holding one character from each of `count` clients. @param {number} count */
function docOfClients (count) {
  const ydoc = new Y.Doc()
  /** @type {Uint8Array[]} */
  const updates = []
  for (let i = 0; i < count; i++) {
    const client = new Y.Doc()
    client.clientID = 1000 + i
    client.getText(TEXT_NAME).insert(0, 'x')
    updates.push(Y.encodeStateAsUpdate(client))
    if (updates.length === MERGED || i === count - 1) Y.applyUpdate(ydoc, Y.mergeUpdates(updates.splice(0)))
  }
  return ydoc
}

export async function run () {
  /** @type {{ clients: number, transactionUs: number }[]} */
  const results = []
  for (const count of CLIENTS) {
    const ydoc = docOfClients(count)
    /** @type {number[]} */
    const rounds = []
    for (let round = 0; round < ROUNDS; round++) {
      const started = process.hrtime.bigint()
      for (let i = 0; i < TRANSACTIONS; i++) ydoc.transact(() => {})
      rounds.push(Number(process.hrtime.bigint() - started) / TRANSACTIONS / 1000)
    }
    const transactionUs = rounds.sort((a, b) => a - b)[ROUNDS >> 1]
    results.push({ clients: ydoc.store.clients.size, transactionUs })
    ydoc.destroy()
  }
  console.log(`An empty Yjs transaction, by the clients the document holds edits from (median of ${ROUNDS} rounds of ${TRANSACTIONS}): ` +
    results.map(({ clients, transactionUs }) => `${clients} clients ${transactionUs < 1000 ? `${transactionUs.toFixed(0)} µs` : `${(transactionUs / 1000).toFixed(1)} ms`}`).join(', '))
  return results
}

if (import.meta.url === `file://${process.argv[1]}`) await run()
