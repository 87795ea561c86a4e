import { builtinModules } from 'node:module'
import neostandard from 'neostandard'

// Which way imports may point. isomorphic/ holds what both ends of a connection share and runs
// unchanged in browsers and in Node, so it imports no Node built-in, uses no Node global and reaches
// nothing outside itself but packages (test/isomorphic.test.js bundles it for the browser, which
// also proves those packages browser-safe). The browser client imports nothing from the server, the
// load test or the tests, and the server nothing from the browser client, the load test or the tests.
// The load test imports nothing from the tests; the tests may import the load test's parts.

const NODE_BUILTIN = `^(?:node:|(?:${builtinModules.filter(name => !name.includes(':')).join('|')})(?:/|$))`
const NODE_GLOBALS = ['process', 'Buffer', 'require', 'module', '__dirname', '__filename', 'global', 'setImmediate', 'clearImmediate']

/**
 * no-restricted-imports refusing every import whose specifier matches one of `patterns`.
 * @param {[regex: string, message: string][]} patterns
 */
const refuseImports = patterns => ['error', { patterns: patterns.map(([regex, message]) => ({ regex, message })) }]

export default [
  ...neostandard({ ignores: ['node_modules/**', 'data/**', '.tmp/**', 'client/dist/**', 'reports/**', 'types/**'] }),
  {
    files: ['isomorphic/**/*.js'],
    rules: {
      'no-restricted-imports': refuseImports([
        [NODE_BUILTIN, 'isomorphic/ runs in browsers too: no Node built-in modules.'],
        ['^\\.\\.(?:/|$)', 'isomorphic/ imports nothing from the rest of the repository, which may be Node-only.']
      ]),
      'no-restricted-globals': ['error', ...NODE_GLOBALS.map(name => ({ name, message: 'isomorphic/ runs in browsers too: no Node globals.' }))]
    }
  },
  {
    files: ['client/src/**/*.js'],
    rules: {
      'no-restricted-imports': refuseImports([
        ['^(?:\\.\\./)+(?:server|loadtest|test)/', 'The browser client imports wire code from isomorphic/, never from server/, loadtest/ or test/.']
      ])
    }
  },
  {
    files: ['server/**/*.js'],
    rules: {
      'no-restricted-imports': refuseImports([
        ['^(?:\\.\\./)+(?:client/src|loadtest|test)/', 'The server imports nothing from the browser client, the load test or the tests.']
      ])
    }
  },
  {
    files: ['loadtest/**/*.js'],
    rules: {
      'no-restricted-imports': refuseImports([
        ['^(?:\\.\\./)+test/', 'The load test imports nothing from the tests; a part both need lives in loadtest/, and test/ imports it.']
      ])
    }
  }
]
