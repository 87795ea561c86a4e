// Sessions may be created with other names for the languages the pages know (`rs` for `rust`):
// both editors resolve them here before picking their syntax support.

/** @type {Record<string, string>} */
const ALIASES = {
  js: 'javascript',
  mjs: 'javascript',
  ts: 'typescript',
  py: 'python',
  rs: 'rust',
  golang: 'go',
  c: 'cpp',
  'c++': 'cpp',
  h: 'cpp',
  md: 'markdown'
}

/**
 * @param {string} language a session's `language`
 * @returns {string} the id it stands for (`rs` → `rust`), or `language` itself
 */
export function canonicalLanguage (language) {
  return Object.hasOwn(ALIASES, language) ? ALIASES[language] : language
}
