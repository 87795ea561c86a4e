// `npm run bench`: the single-process micro-benchmarks quoted in the README.
import { run as ackLatency } from './ack-latency.js'
import { run as docLoad } from './doc-load.js'

console.log(`node ${process.version}, ${(await import('node:os')).cpus().length} CPUs`)
await ackLatency()
await docLoad()
