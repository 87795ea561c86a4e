import { createHash } from 'node:crypto'
import { mapLimit } from './api.js'
import { now, sleepUntil } from './clock.js'

const REST_CONCURRENCY = 8
const ATTEMPTS = 5
const RETRY_MS = 200

// The end-of-level check that the system did its job: every editor of a room holds exactly the text
// the server serves for it (GET /api/sessions/:id/content), compared by digest.

/**
 * Checks every room; retries briefly, since a relayed update may still be on its way.
 * @param {Pick<import('./api.js').TandemApi, 'content'>} api
 * @param {import('./pool.js').WorkerPool} pool
 * @param {{ id: string }[]} sessions
 * @param {import('./plan.js').RoomPlan} plan
 */
export function checkConvergence (api, pool, sessions, plan) {
  return checkRooms(sessions, async () => {
    const server = await mapLimit(sessions, REST_CONCURRENCY, async session => sha1(await api.content(session.id)))
    const digests = (await pool.all('digests')).flatMap(reply => reply.digests)
    const divergedRooms = new Set()
    for (const { index, digest } of digests) {
      if (digest !== server[plan[index].room]) divergedRooms.add(plan[index].room)
    }
    return { diverged: divergedRooms.size, editors: digests.length }
  })
}

/**
 * Runs `check` until no room diverges, at most ATTEMPTS times, RETRY_MS apart.
 * @param {unknown[]} rooms
 * @param {() => Promise<{ diverged: number, editors: number }>} check rooms that diverged, of how many editors' digests
 * @returns {Promise<Convergence>}
 */
export async function checkRooms (rooms, check) {
  let result = { diverged: rooms.length, editors: 0 }
  for (let attempt = 0; attempt < ATTEMPTS && result.diverged > 0; attempt++) {
    if (attempt > 0) await sleepUntil(now() + RETRY_MS)
    result = await check()
  }
  return { converged: result.diverged === 0, rooms: rooms.length, ...result }
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
