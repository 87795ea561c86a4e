import { Redis } from 'ioredis'

// What Redis ran over the scale bench's measured window: `INFO commandstats` read as the window opens
// and as it closes, differenced. Redis counts a command a script runs (`redis.call`) as well as the
// EVALSHA that ran it, so these are commands executed, not round trips. The bench's own INFO between
// the two reads is taken out. The window also holds the level's first /metrics scrape, which a
// cluster answers by asking its other processes through Redis: a few commands, beside thousands.

/** @typedef {Record<string, number>} CommandCalls calls by command, as Redis names them (`xadd`, `client|setname`) */

// The first read's INFO is the one command of the bench's that the second read counts.
const OWN_CALLS = Object.freeze({ info: 1 })

/** @param {string} text the reply to INFO commandstats @returns {CommandCalls} */
export function callsOf (text) {
  /** @type {CommandCalls} */
  const calls = {}
  for (const [, name, count] of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls[name] = Number(count)
  return calls
}

/**
 * The calls made between two reads, less `own`, leaving out commands not called in between.
 * @param {CommandCalls} before @param {CommandCalls} after @param {CommandCalls} [own]
 * @returns {CommandCalls}
 */
export function callsBetween (before, after, own = OWN_CALLS) {
  /** @type {CommandCalls} */
  const calls = {}
  for (const [name, count] of Object.entries(after)) {
    const made = count - (before[name] ?? 0) - (own[name] ?? 0)
    if (made > 0) calls[name] = made
  }
  return calls
}

/**
 * A client that reads a Redis's command counts at the edges of a level's measured window: pass
 * `onWindow` to runLevel, then `calls` holds what was run in between.
 * @param {string} url
 */
export async function commandCounter (url) {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 })
  // A lost connection fails the next read, and with it the level; the event needs a listener.
  redis.on('error', () => {})
  await redis.connect()
  const read = async () => callsOf(await redis.info('commandstats'))
  /** @type {CommandCalls | null} */
  let before = null
  /** @type {CommandCalls | null} */
  let calls = null
  return {
    /** @param {'start' | 'end'} edge */
    async onWindow (edge) {
      if (edge === 'start') before = await read()
      else if (before !== null) calls = callsBetween(before, await read())
    },
    /** What Redis ran over the window; null until it closed. */
    get calls () { return calls },
    async close () { await redis.quit().catch(() => redis.disconnect()) }
  }
}
