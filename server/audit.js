/** Refusals of one address for one action are logged at most once per this many ms. */
const SAMPLE_MS = 10_000
/** Addresses remembered for sampling; past this the one logged longest ago is forgotten. */
const MAX_SAMPLED = 10_000

/**
 * Audit lines: who did what, for auth failures, refusals at a limit and management actions. They are
 * ordinary pino lines (time included) tagged `audit: true`, so a log pipeline can route them apart.
 * Fields name the client (ip, user, socket) and the target (session, token id); never a token or key.
 * @param {import('pino').Logger} logger
 * @param {{ now?: () => number }} [options] `now`: the clock of the sampling, in ms
 */
export function createAudit (logger, { now = Date.now } = {}) {
  const log = logger.child({ audit: true })
  /** @type {Map<string, { at: number, unlogged: number }>} by action and address, the one logged longest ago first */
  const sampled = new Map()
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
     * connection over the limit): at most one line per address and action every 10 s, so a flood
     * costs a line, not a line per request. The next line logged says how many were left out.
     * @param {string} action
     * @param {{ ip: string | undefined, [field: string]: unknown }} fields
     */
    refusedFrom (action, fields) {
      const key = `${action} ${fields.ip}`
      const at = now()
      const last = sampled.get(key)
      if (last && at - last.at < SAMPLE_MS) {
        last.unlogged++
        return
      }
      log.warn({ action, ...fields, ...(last && last.unlogged > 0 ? { unlogged: last.unlogged } : {}) }, `${action} refused`)
      sampled.delete(key)
      sampled.set(key, { at, unlogged: 0 })
      if (sampled.size > MAX_SAMPLED) sampled.delete(/** @type {string} */ (sampled.keys().next().value))
    }
  }
}

/** @typedef {ReturnType<typeof createAudit>} Audit */
