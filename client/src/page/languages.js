// Syntax support by session language. Each language is its own chunk, fetched only by the editors
// of a session in that language, so the page does not carry ten grammars to show one.

import { canonicalLanguage } from './language-aliases.js'

/** @typedef {import('@codemirror/state').Extension} Extension */

/** @type {Record<string, () => Promise<Extension>>} */
const LOADERS = {
  javascript: () => import('@codemirror/lang-javascript').then(m => m.javascript()),
  typescript: () => import('@codemirror/lang-javascript').then(m => m.javascript({ typescript: true })),
  jsx: () => import('@codemirror/lang-javascript').then(m => m.javascript({ jsx: true })),
  tsx: () => import('@codemirror/lang-javascript').then(m => m.javascript({ jsx: true, typescript: true })),
  python: () => import('@codemirror/lang-python').then(m => m.python()),
  rust: () => import('@codemirror/lang-rust').then(m => m.rust()),
  go: () => import('@codemirror/lang-go').then(m => m.go()),
  java: () => import('@codemirror/lang-java').then(m => m.java()),
  cpp: () => import('@codemirror/lang-cpp').then(m => m.cpp()),
  html: () => import('@codemirror/lang-html').then(m => m.html()),
  css: () => import('@codemirror/lang-css').then(m => m.css()),
  json: () => import('@codemirror/lang-json').then(m => m.json()),
  markdown: () => import('@codemirror/lang-markdown').then(m => m.markdown())
}

/** The languages offered when creating a session, plain text first. */
export const LANGUAGES = ['plaintext', ...Object.keys(LOADERS)]

/**
 * @param {string} language a session's `language`
 * @returns {Promise<Extension>} its syntax support, or nothing for plain text and unknown languages
 */
export async function languageSupport (language) {
  const id = canonicalLanguage(language)
  const load = Object.hasOwn(LOADERS, id) ? LOADERS[id] : undefined
  return load ? load() : []
}
