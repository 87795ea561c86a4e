// Session and document ids (one id names both): what the server mints, and all that either end
// accepts in a path, a query or an event payload.

export const DOC_ID_PATTERN = /^[a-z0-9]{1,64}$/

/**
 * Whether `value` is a well-formed document id.
 * @param {unknown} value
 * @returns {value is string}
 */
export function isDocId (value) {
  return typeof value === 'string' && DOC_ID_PATTERN.test(value)
}
