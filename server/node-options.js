// The Node.js options Tandem's server runs with wherever Tandem starts it: `npm start` (package.json
// repeats them), the PM2 cluster and the load test's servers. `--max-semi-space-size=16` caps V8's
// young generation at Node 20's size: later Node versions grow it under a burst and keep it grown,
// holding garbage (docs/PERFORMANCE.md, "V8's young generation at Node 20's size").
export const NODE_OPTIONS = Object.freeze(['--max-semi-space-size=16'])
