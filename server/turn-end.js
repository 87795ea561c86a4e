// The work left to the end of an event loop's turn, once its input has been read: first the updates
// that crowded documents took in the turn are applied, in one transaction each (live-doc.js); then
// the update log writes the records the turn appended that are still waiting (update-log.js). Both
// run in one immediate. The applies queue their documents' writes, which reach the log from promise callbacks,
// so the log's write waits until those have run: were it an immediate of its own, the records of an
// immediate's applies would wait for the next turn's write, a whole turn more before their ACKs.

/** @type {(() => void)[]} */
const applies = []
/** @type {(() => void)[]} */
const writes = []
let scheduled = false

/**
 * Runs `apply` at the end of this turn, before the update log's write.
 * @param {() => void} apply
 */
export function applyAtTurnEnd (apply) {
  applies.push(apply)
  schedule()
}

/**
 * Runs `write` at the end of this turn, after the applies and whatever they queued.
 * @param {() => void} write
 */
export function writeAtTurnEnd (write) {
  writes.push(write)
  schedule()
}

function schedule () {
  if (scheduled) return
  scheduled = true
  setImmediate(endTurn)
}

function endTurn () {
  try {
    for (const apply of applies.splice(0)) apply()
  } finally {
    // A tick queued from a promise callback runs once no promise callback is left to run.
    queueMicrotask(() => process.nextTick(writeAll))
  }
}

function writeAll () {
  scheduled = false
  // Applies taken since the immediate ran go to the next turn's, as do writes queued from now on.
  if (applies.length > 0) schedule()
  for (const write of writes.splice(0)) write()
}
