import 'monaco-editor/languages/definitions/cpp/register.js'
import 'monaco-editor/languages/definitions/css/register.js'
import 'monaco-editor/languages/definitions/go/register.js'
import 'monaco-editor/languages/definitions/html/register.js'
import 'monaco-editor/languages/definitions/java/register.js'
import 'monaco-editor/languages/definitions/javascript/register.js'
import 'monaco-editor/languages/definitions/markdown/register.js'
import 'monaco-editor/languages/definitions/python/register.js'
import 'monaco-editor/languages/definitions/rust/register.js'
import 'monaco-editor/languages/definitions/typescript/register.js'
import { languages } from 'monaco-editor/editor/editor.api.js'
import { canonicalLanguage } from './language-aliases.js'

// Monaco's syntax colouring for the languages the CodeMirror page offers (languages.js). Each
// import above registers one language and fetches its grammar, a chunk of its own, only when a
// model in that language is created.

/**
 * Monaco's ids where they differ from the session's. Monaco's JSON support is a language service
 * in a worker of its own; its JavaScript grammar colours JSON well enough without one.
 * @type {Record<string, string>}
 */
const MONACO_IDS = {
  jsx: 'javascript',
  tsx: 'typescript',
  json: 'javascript'
}

/**
 * @param {string} language a session's `language`
 * @returns {string} the Monaco language id to create its model with, `plaintext` for one not registered above
 */
export function monacoLanguage (language) {
  const id = canonicalLanguage(language)
  const monacoId = Object.hasOwn(MONACO_IDS, id) ? MONACO_IDS[id] : id
  return languages.getLanguages().some(registered => registered.id === monacoId) ? monacoId : 'plaintext'
}
