// Node.js options for `npm start` (package.json repeats them), PM2 and the load test's servers.
// `--max-semi-space-size=16` holds V8's young generation at Node 20's size: later versions grow it
// under a burst and keep it grown (docs/PERFORMANCE.md, "V8's young generation at Node 20's size").
export const NODE_OPTIONS = Object.freeze(['--max-semi-space-size=16'])
