// Cleanups for the end of a test file, so a failed assertion cannot leave a process or a socket
// open and hang the run. Registered only where tests run (under `node --test`, or a `.test.js` file
// run directly): the benchmarks reuse these helpers, and a hook would start a test runner there.
const inTests = process.env.NODE_TEST_CONTEXT !== undefined || /\.test\.js$/.test(process.argv[1] ?? '')
const { after } = inTests ? await import('node:test') : { after: () => {} }

/** @param {() => unknown} cleanup */
export function atEnd (cleanup) {
  after(cleanup)
}
