import { createHash } from 'node:crypto'
import { mapLimit } from './api.js'
import { now, sleepUntil } from './clock.js'

const REST_CONCURRENCY = 8
const ATTEMPTS = 5
const RETRY_MS = 200

// The end-of-level check that the system did its job: every editor of a room holds exactly the text
// the server serves for it (GET /api/sessions/:id/content), compared by digest. A server that serves
// no text (a peer system) is checked by agreement: every editor of a room holds the same text.

/**
 * Checks every room; retries briefly, since a relayed update may still be on its way.
 * @param {import('./api.js').TandemApi} api
 * @param {import('./pool.js').WorkerPool} pool
 * @param {{ id: string }[]} sessions
 * @param {import('./plan.js').RoomPlan} plan
 */
export async function checkConvergence (api, pool, sessions, plan) {
  let diverged = sessions.length
  let editors = 0
  for (let attempt = 0; attempt < ATTEMPTS && diverged > 0; attempt++) {
    if (attempt > 0) await sleepUntil(now() + RETRY_MS)
    const server = await mapLimit(sessions, REST_CONCURRENCY, async session => sha1(await api.content(session.id)))
    const digests = (await pool.all('digests')).flatMap(reply => reply.digests)
    const divergedRooms = new Set()
    for (const { index, digest } of digests) {
      if (digest !== server[plan[index].room]) divergedRooms.add(plan[index].room)
    }
    diverged = divergedRooms.size
    editors = digests.length
  }
  return { converged: diverged === 0, rooms: sessions.length, diverged, editors }
}

/**
 * Checks that the editors of each room agree; retries briefly, like checkConvergence.
 * @param {import('./pool.js').WorkerPool} pool
 * @param {{ id: string }[]} rooms
 * @param {import('./plan.js').RoomPlan} plan
 */
export async function checkAgreement (pool, rooms, plan) {
  let diverged = rooms.length
  let editors = 0
  for (let attempt = 0; attempt < ATTEMPTS && diverged > 0; attempt++) {
    if (attempt > 0) await sleepUntil(now() + RETRY_MS)
    const digests = (await pool.all('digests')).flatMap(reply => reply.digests)
    /** @type {Map<number, Set<string>>} */
    const byRoom = new Map()
    for (const { index, digest } of digests) {
      const room = plan[index].room
      if (!byRoom.has(room)) byRoom.set(room, new Set())
      byRoom.get(room)?.add(digest)
    }
    diverged = [...byRoom.values()].filter(set => set.size > 1).length
    editors = digests.length
  }
  return { converged: diverged === 0, rooms: rooms.length, diverged, editors }
}

/** @param {string} text */
const sha1 = text => createHash('sha1').update(text).digest('hex')

/**
 * @typedef {object} Convergence
 * @property {boolean | null} converged null when not checked (editors that do not apply remote updates)
 * @property {number} rooms
 * @property {number} diverged
 * @property {number} editors
 */
