// Which server process each editor connects to when the load test is given several. By default
// (placement `editors`) editor `slot` of a room goes to process `slot mod N`, the way a non-sticky
// balancer spreads one room's editors over every process, so each room's updates have to cross
// between processes through Redis. With placement `rooms`, every editor of room `r` goes to process
// `r mod N`, as a balancer that sends each document to one process would: nothing crosses, which
// measures what the processes cost apart from what they send each other.

/** @typedef {'editors' | 'rooms'} Placement */
export const PLACEMENTS = Object.freeze(/** @type {Placement[]} */ (['editors', 'rooms']))

/**
 * The process (index into the URL list) of the editor in region `slot` of its room.
 * @param {number} slot
 * @param {number} processes
 */
export const processOf = (slot, processes) => slot % processes

/**
 * The process of an editor under a placement.
 * @param {{ room: number, slot: number }} editor
 * @param {number} processes
 * @param {Placement} placement
 */
export const processOfEditor = ({ room, slot }, processes, placement) =>
  placement === 'rooms' ? room % processes : processOf(slot, processes)

/**
 * How the editors of a room of `roomSize` are spread: per process, the slots it holds.
 * @param {number} roomSize
 * @param {number} processes
 * @returns {number[][]}
 */
export function spreadOf (roomSize, processes) {
  /** @type {number[][]} */
  const byProcess = Array.from({ length: Math.min(processes, roomSize) }, () => [])
  for (let slot = 0; slot < roomSize; slot++) byProcess[processOf(slot, processes)].push(slot)
  return byProcess
}

/**
 * The spread of every room size a run uses, with its sentence, e.g. `rooms of 5: editors 0,2,4 on
 * process 0; 1,3 on process 1`.
 * @param {number[]} roomSizes
 * @param {number} processes
 * @returns {{ roomSize: number, byProcess: number[][], text: string }[]}
 */
export function describeSpread (roomSizes, processes) {
  return [...new Set(roomSizes)].sort((a, b) => b - a).map(roomSize => {
    const byProcess = spreadOf(roomSize, processes)
    const parts = byProcess.map((slots, process) => `${process === 0 ? 'editors ' : ''}${slots.join(',')} on process ${process}`)
    return { roomSize, byProcess, text: `rooms of ${roomSize}: ${parts.join('; ')}` }
  })
}
