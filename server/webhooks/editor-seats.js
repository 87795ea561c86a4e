/** @import { Holder, Seats } from '../storage/seats.js' */

/**
 * Seats that say who comes and goes: a join takes a seat before it enters a room and every leave
 * gives it back (a failed join too), so each `joined` is followed by exactly one `left`.
 * @param {Seats} seats
 * @param {{ joined: (docId: string, holder: Holder) => void, left: (docId: string, holder: Holder) => void }} announce
 * @returns {Seats}
 */
export function announcingSeats (seats, { joined, left }) {
  return {
    async take (docId, holder, limits) {
      const taken = await seats.take(docId, holder, limits)
      if ('editors' in taken) joined(docId, holder)
      return taken
    },
    free (docId, holder) {
      seats.free(docId, holder)
      left(docId, holder)
    },
    counts: docIds => seats.counts(docIds),
    close: () => seats.close()
  }
}
