import { availableParallelism } from 'node:os'

// How a level is laid out: which editor is in which room and region, and which generator thread
// runs it. Rooms are filled in order (the last may be smaller); threads get contiguous blocks of
// editors, so a room usually lives in one thread and its broadcasts stay inside it.

// Messages a generator thread handles per second with room to spare (a message is an update or a
// cursor move, sent, or received and applied). On a 2-core machine sharing it with the server, one
// thread was 90% busy at 17,500 messages/s (50 editors in one document), about 55% at 10,000.
const MESSAGES_PER_THREAD = 10000

/** @typedef {{ room: number, slot: number, slots: number }[]} RoomPlan per editor: its room, its region, the room's size */

/**
 * @param {number} editors
 * @param {number} perRoom Infinity for one room
 * @returns {RoomPlan}
 */
export function planRooms (editors, perRoom) {
  const size = Math.min(perRoom, editors)
  return Array.from({ length: editors }, (_, index) => {
    const room = Math.floor(index / size)
    return { room, slot: index % size, slots: Math.min(size, editors - room * size) }
  })
}

/**
 * The size of each room of a level, in order (the last may be smaller).
 * @param {number} editors
 * @param {number} perRoom Infinity for one room
 */
export function roomSizesOf (editors, perRoom) {
  const size = Math.min(perRoom, editors)
  return Array.from({ length: Math.ceil(editors / size) }, (_, room) => Math.min(size, editors - room * size))
}

/**
 * Messages per second the generator handles at this load: each edit and cursor move is sent once
 * and received by every other editor of its room.
 * @param {{ editors: number, perRoom: number, rate: number, awarenessRate: number }} load
 */
export function messageRate ({ editors, perRoom, rate, awarenessRate }) {
  const roomSize = Math.min(perRoom, editors)
  return editors * (rate + awarenessRate) * roomSize
}

/**
 * Generator threads for a level: as asked, or enough for the message rate, at most one per core.
 * @param {number} asked 0 for automatic
 * @param {Parameters<typeof messageRate>[0]} load
 */
export function workerCount (asked, load) {
  if (asked > 0) return Math.min(asked, load.editors)
  const needed = Math.ceil(messageRate(load) / MESSAGES_PER_THREAD)
  return Math.max(1, Math.min(needed, availableParallelism(), load.editors))
}

/**
 * Contiguous blocks of editor indices, one per thread, as even as possible.
 * @param {number} editors
 * @param {number} threads
 */
export function assignThreads (editors, threads) {
  return Array.from({ length: threads }, (_, t) => {
    const from = Math.floor(t * editors / threads)
    const to = Math.floor((t + 1) * editors / threads)
    return Array.from({ length: to - from }, (_, i) => from + i)
  })
}
