import { limitKeyOf } from './http/client-ip.js'

/** Refusals of one address, action and code are logged at most once per this many ms. */
const SAMPLE_MS = 10_000
/** An unparsable X-Forwarded-For is the client's to choose. */
const MAX_ADDRESS_CHARS = 64
/** Past this the key refused longest ago is written out and dropped. */
const MAX_SAMPLED = 10_000

/** @typedef {{ at: number, action: string, fields: object | null, unlogged: number }} Sampled when a key's last line was written, the fields of the first refusal left out since, and how many were */

/**
 * Audit lines: auth failures, refusals at a limit, management actions, as pino lines tagged
 * `audit: true`. Fields name client and target, never a token or key. @param {import('pino').Logger} logger
 * @param {{ now?: () => number }} [options] `now`: the clock of the sampling, in ms
 */
export function createAudit (logger, { now = () => performance.now() } = {}) {
  const log = logger.child({ audit: true })
  /** @type {Map<string, Sampled>} per action, code and address; the one refused longest ago first */
  const sampled = new Map()

  /** @param {Sampled} entry */
  const writeUnlogged = (entry) => {
    if (entry.unlogged === 0) return
    log.warn({ action: entry.action, ...entry.fields, unlogged: entry.unlogged }, `${entry.action} refused ${entry.unlogged} more times`)
    entry.fields = null
    entry.unlogged = 0
  }

  // Windows that ended with refusals left out get their line; quiet addresses are forgotten.
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
     * A refusal a client can repeat as fast as it sends: one line per address (IPv6 by its /64), action
     * and code per SAMPLE_MS, and a line counting those left out (`unlogged`) when the window ends.
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
