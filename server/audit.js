import { limitKeyOf } from './http/client-ip.js'

/** Refusals of one address, action and code are logged at most once per this many ms. */
const SAMPLE_MS = 10_000
/** Longest address part of a sampling key: an unparsable X-Forwarded-For is the client's to choose. */
const MAX_ADDRESS_CHARS = 64
/** Keys remembered for sampling; past this the one refused longest ago is written out and dropped. */
const MAX_SAMPLED = 10_000

/** @typedef {{ at: number, action: string, fields: object | null, unlogged: number }} Sampled when a key's last line was written, the fields of the first refusal left out since, and how many were */

/**
 * Audit lines: who did what, for auth failures, refusals at a limit and management actions. They are
 * ordinary pino lines (time included) tagged `audit: true`, so a log pipeline can route them apart.
 * Fields name the client (ip, user, socket) and the target (session, token id); never a token or key.
 * @param {import('pino').Logger} logger
 * @param {{ now?: () => number }} [options] `now`: the clock of the sampling, in ms
 */
export function createAudit (logger, { now = () => performance.now() } = {}) {
  const log = logger.child({ audit: true })
  /** @type {Map<string, Sampled>} per action, code and address; the one refused longest ago first */
  const sampled = new Map()

  /** The line of the refusals left out since an entry's last line, if any. @param {Sampled} entry */
  const writeUnlogged = (entry) => {
    if (entry.unlogged === 0) return
    log.warn({ action: entry.action, ...entry.fields, unlogged: entry.unlogged }, `${entry.action} refused ${entry.unlogged} more times`)
    entry.fields = null
    entry.unlogged = 0
  }

  // Each window that ended with refusals left out gets its line, and quiet addresses are forgotten.
  const sweep = setInterval(() => {
    const at = now()
    for (const [key, entry] of sampled) {
      if (at - entry.at < SAMPLE_MS) continue
      writeUnlogged(entry)
      sampled.delete(key)
    }
  }, SAMPLE_MS)
  sweep.unref()

  return {
    /** A management action that succeeded. @param {string} action @param {object} fields */
    action (action, fields) {
      log.info({ action, ...fields }, action)
    },
    /** A request or event refused for auth or a limit. @param {string} action @param {object} fields */
    refused (action, fields) {
      log.warn({ action, ...fields }, `${action} refused`)
    },
    /**
     * A refusal that a client can repeat as fast as it can send (a wrong key, a rate limit, a
     * connection over the limit): at most one line per address (an IPv6 client by its /64), action
     * and code or reason every 10 s, so a flood costs a line, not a line per request. The refusals
     * left out get a line of their own, with their count (`unlogged`), when their 10 s are over.
     * @param {string} action
     * @param {{ ip: string | undefined, code?: string, reason?: string, [field: string]: unknown }} fields
     */
    refusedFrom (action, fields) {
      const address = limitKeyOf(String(fields.ip)).slice(0, MAX_ADDRESS_CHARS)
      const key = `${action}\n${fields.code ?? fields.reason ?? ''}\n${address}`
      const at = now()
      const entry = sampled.get(key)
      sampled.delete(key)
      if (entry && at - entry.at < SAMPLE_MS) {
        entry.fields ??= fields
        entry.unlogged++
        sampled.set(key, entry)
        return
      }
      if (entry) writeUnlogged(entry)
      log.warn({ action, ...fields }, `${action} refused`)
      sampled.set(key, { at, action, fields: null, unlogged: 0 })
      if (sampled.size > MAX_SAMPLED) {
        const [oldestKey, oldest] = /** @type {[string, Sampled]} */ (sampled.entries().next().value)
        writeUnlogged(oldest)
        sampled.delete(oldestKey)
      }
    },
    /** Writes out the refusals left out so far and stops sampling. */
    close () {
      clearInterval(sweep)
      for (const entry of sampled.values()) writeUnlogged(entry)
      sampled.clear()
    }
  }
}

/** @typedef {ReturnType<typeof createAudit>} Audit */
