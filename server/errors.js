import { ERRORS } from './protocol.js'

/** An expected failure with a stable code; anything else thrown is an INTERNAL error. */
export class AppError extends Error {
  /**
   * @param {import('./protocol.js').ErrorCode} code
   * @param {string} message
   * @param {unknown} [details]
   */
  constructor (code, message, details) {
    super(message)
    this.name = 'AppError'
    this.code = code
    this.details = details
  }

  get status () {
    return ERRORS[this.code].status
  }
}

/**
 * The body sent to clients for any error: known codes keep their message, anything else is hidden.
 * @param {unknown} err
 * @returns {import('./protocol.js').ErrorBody}
 */
export function errorBody (err) {
  if (err instanceof AppError) {
    return err.details === undefined
      ? { code: err.code, message: err.message }
      : { code: err.code, message: err.message, details: err.details }
  }
  return { code: 'INTERNAL', message: 'Internal server error' }
}

/**
 * @param {unknown} err
 * @returns {number}
 */
export function statusOf (err) {
  return err instanceof AppError ? err.status : 500
}
