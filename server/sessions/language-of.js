// The language of a session created without one, from its name's extension: `main.rs` is Rust. The
// ids are those the editor page knows (client/src/page/languages.js); anything else is plain text.

/** @type {Record<string, string>} */
const BY_EXTENSION = {
  js: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  jsx: 'jsx',
  ts: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  tsx: 'tsx',
  py: 'python',
  rs: 'rust',
  go: 'go',
  java: 'java',
  c: 'cpp',
  h: 'cpp',
  cc: 'cpp',
  cpp: 'cpp',
  cxx: 'cpp',
  hpp: 'cpp',
  html: 'html',
  htm: 'html',
  css: 'css',
  json: 'json',
  md: 'markdown',
  markdown: 'markdown'
}

export const PLAIN_TEXT = 'plaintext'

/**
 * @param {string} name a session name such as `main.rs` or `src/App.tsx`
 * @returns {string} a language id, `plaintext` when the extension says nothing
 */
export function languageOf (name) {
  const extension = /\.([A-Za-z0-9+]+)$/.exec(name.trim())?.[1].toLowerCase()
  return (extension && BY_EXTENSION[extension]) || PLAIN_TEXT
}
