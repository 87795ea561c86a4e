/**
 * Audit lines: who did what, for auth failures, refusals at a limit and management actions. They are
 * ordinary pino lines (time included) tagged `audit: true`, so a log pipeline can route them apart.
 * Fields name the client (ip, user, socket) and the target (session, token id); never a token or key.
 * @param {import('pino').Logger} logger
 */
export function createAudit (logger) {
  const log = logger.child({ audit: true })
  return {
    /** A management action that succeeded. @param {string} action @param {object} fields */
    action (action, fields) {
      log.info({ action, ...fields }, action)
    },
    /** A request or event refused for auth or a limit. @param {string} action @param {object} fields */
    refused (action, fields) {
      log.warn({ action, ...fields }, `${action} refused`)
    }
  }
}

/** @typedef {ReturnType<typeof createAudit>} Audit */
