// The Node.js options Tandem's server runs with, wherever Tandem starts it: `npm start`
// (package.json, which cannot import this file, repeats them), the PM2 cluster
// (ecosystem.config.js, so the Docker image and Render too) and the load test's servers.
//
// `--max-semi-space-size=16`: V8's young generation at most two semi-spaces of 16 MiB, the size
// Node 20 gave it. Node 22 and later size it by the machine's memory, up to 64 MiB on a large
// one, and grow it under a burst of allocation, as when editors connect. It then stays grown,
// holding only garbage between scavenges: on Node 26 it added about 30 KiB per idle editor to the
// RSS of 1,000. Capped, the server used 9-18 % less RSS under load, at the same CPU and tails
// (docs/PERFORMANCE.md, "V8's young generation at Node 20's size").
export const NODE_OPTIONS = Object.freeze(['--max-semi-space-size=16'])
