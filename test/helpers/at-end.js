// Cleanups for the end of a test file, so a failed assertion cannot leave a process or a socket
// open and hang the run. Registered only in a test file's process (`node --test` runs each as
// `node <file>.test.js`): the benchmarks reuse these helpers, and a hook would start a test runner
// there. (NODE_TEST_CONTEXT would not tell: a process a test starts inherits it.)
const inTests = /\.test\.js$/.test(process.argv[1] ?? '')
const { after } = inTests ? await import('node:test') : { after: () => {} }

/** @param {() => unknown} cleanup */
export function atEnd (cleanup) {
  after(cleanup)
}
