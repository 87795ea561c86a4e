import { builtinModules } from 'node:module'
import neostandard from 'neostandard'

// Which way imports may point. isomorphic/ holds what both ends of a connection share and runs
// unchanged in browsers and in Node, so it imports no Node built-in, uses no Node global and reaches
// nothing outside itself but packages (test/isomorphic.test.js bundles it for the browser, which
// also proves those packages browser-safe). The browser client imports nothing from server/,
// loadtest/, bench/ or test/; the server nothing from client/ (what it shares with the page's build
// lives in scripts/), loadtest/, bench/ or test/. The load test reaches the server as any client
// does, so it imports nothing from server/, nor from bench/ or test/. The developer benchmarks in
// bench/ may import the server's internals and the load test's parts. Only the tests import test/.

const NODE_BUILTIN = `^(?:node:|(?:${builtinModules.filter(name => !name.includes(':')).join('|')})(?:/|$))`
const NODE_GLOBALS = ['process', 'Buffer', 'require', 'module', '__dirname', '__filename', 'global', 'setImmediate', 'clearImmediate']

/**
 * no-restricted-imports refusing every import whose specifier matches one of `patterns`.
 * @param {[regex: string, message: string][]} patterns
 */
const refuseImports = patterns => ['error', { patterns: patterns.map(([regex, message]) => ({ regex, message })) }]

export default [
  ...neostandard({ ignores: ['node_modules/**', 'data/**', '.tmp/**', 'client/dist/**', 'client/lib/**', 'reports/**', 'types/**'] }),
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
        ['^(?:\\.\\./)+(?:server|loadtest|bench|test)/', 'The browser client imports wire code from isomorphic/, never from server/, loadtest/, bench/ or test/.']
      ])
    }
  },
  {
    files: ['server/**/*.js'],
    rules: {
      'no-restricted-imports': refuseImports([
        ['^(?:\\.\\./)+(?:client|loadtest|bench|test)/', 'The server imports nothing from client/, loadtest/, bench/ or test/; what it shares with the page\'s build lives in scripts/.']
      ])
    }
  },
  {
    files: ['loadtest/**/*.js'],
    rules: {
      'no-restricted-imports': refuseImports([
        ['^(?:\\.\\./)+(?:server|bench|test)/', 'The load test reaches the server as any client does, never through server/, and imports nothing from bench/ or test/; a part bench/ or test/ needs lives in loadtest/ and they import it.']
      ])
    }
  },
  {
    files: ['bench/**/*.js'],
    rules: {
      'no-restricted-imports': refuseImports([
        ['^(?:\\.\\./)+test/', 'The benchmarks import nothing from the tests; a part both need lives in bench/ or loadtest/, and test/ imports it.']
      ])
    }
  }
]
