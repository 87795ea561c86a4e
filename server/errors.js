import { ERRORS } from '../isomorphic/error-codes.js'
/** @import { ErrorBody, ErrorCode } from '../isomorphic/error-codes.js' */

/** An expected failure with a stable code; anything else thrown is an INTERNAL error. */
export class AppError extends Error {
  /**
   * @param {ErrorCode} code @param {string} message
   * @param {unknown} [details] @param {{ cause?: unknown }} [options] `cause` is logged, never sent
   */
  constructor (code, message, details, options) {
    super(message, options)
    this.name = 'AppError'
    this.code = code
    this.details = details
  }

  get status () {
    return ERRORS[this.code].status
  }
}

/** Known codes keep their message; anything else is hidden. @param {unknown} err @returns {ErrorBody} */
export function errorBody (err) {
  if (err instanceof AppError) {
    return err.details === undefined
      ? { code: err.code, message: err.message }
      : { code: err.code, message: err.message, details: err.details }
  }
  return { code: 'INTERNAL', message: 'Internal server error' }
}

/** @param {unknown} err @returns {number} */
export function statusOf (err) {
  return err instanceof AppError ? err.status : 500
}

/**
 * A failure of storage itself becomes UNAVAILABLE (retry later), the original kept as its cause.
 * @template T @param {Promise<T>} operation
 */
export async function fromStorage (operation) {
  try {
    return await operation
  } catch (err) {
    if (err instanceof AppError) throw err
    throw new AppError('UNAVAILABLE', 'storage is unavailable; retry later', undefined, { cause: err })
  }
}
