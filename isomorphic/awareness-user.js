// The rules for an awareness state's `user` field (a name and cursor colours), which both ends
// apply: the server refuses an awareness update that breaks them, and the page neither sends nor
// draws one.

/**
 * What an awareness state's `user` field may hold. Editors draw remote cursors with `color` and
 * `colorLight` inside a style attribute (y-codemirror.next) and show `name` as text, so a colour is
 * a hex colour and nothing else (`#rrggbb`, or the short `#rgb`), and a name is short and free of
 * control and bidi-override characters. `colorLight` may add alpha (`#rrggbbaa`, `#rgba`).
 */
export const AWARENESS_USER = Object.freeze({
  COLOR_PATTERN: /^#(?:[0-9a-fA-F]{3}){1,2}$/,
  COLOR_LIGHT_PATTERN: /^#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/,
  MAX_NAME_LENGTH: 64,
  FORBIDDEN_NAME_CHARACTERS: /[\p{Cc}\u2028\u2029\u202A-\u202E\u2066-\u2069]/u
})

/**
 * Why an awareness `user` field is refused, or null if it is acceptable. Fields other than `name`,
 * `color` and `colorLight` are left alone.
 * @param {unknown} user
 * @returns {string | null}
 */
export function awarenessUserProblem (user) {
  if (user === null || typeof user !== 'object' || Array.isArray(user)) return '`user` must be an object'
  const { name, color, colorLight } = /** @type {Record<string, unknown>} */ (user)
  if (name !== undefined) {
    if (typeof name !== 'string') return '`user.name` must be a string'
    if (name.length > AWARENESS_USER.MAX_NAME_LENGTH) return `\`user.name\` must be at most ${AWARENESS_USER.MAX_NAME_LENGTH} characters`
    if (AWARENESS_USER.FORBIDDEN_NAME_CHARACTERS.test(name)) return '`user.name` must not hold control characters'
  }
  if (color !== undefined && (typeof color !== 'string' || !AWARENESS_USER.COLOR_PATTERN.test(color))) {
    return '`user.color` must be a #rrggbb (or #rgb) colour'
  }
  if (colorLight !== undefined && (typeof colorLight !== 'string' || !AWARENESS_USER.COLOR_LIGHT_PATTERN.test(colorLight))) {
    return '`user.colorLight` must be a hex colour: #rrggbb, #rrggbbaa, #rgb or #rgba'
  }
  return null
}
