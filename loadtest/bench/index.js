// `npm run bench`: the single-process micro-benchmarks quoted in the README, then the comparison
// with peer systems (bench/peers.js). `npm run bench -- --peers-only` runs the comparison alone;
// every other argument goes to it (`npm run bench -- --help` lists them). `npm run bench -- scale`
// runs the scale-out bench (bench/scale.js) alone instead, with the arguments after `scale`.
import { run as ackLatency } from './ack-latency.js'
import { run as docLoad } from './doc-load.js'
import { run as memory } from './memory.js'
import { main as peers } from './peers.js'
import { main as scale } from './scale.js'

const PEERS_ONLY = '--peers-only'
const SCALE = 'scale'
const argv = process.argv.slice(2)

if (argv[0] === SCALE) {
  await scale(argv.slice(1))
} else {
  const peerArgs = argv.filter(arg => arg !== PEERS_ONLY)
  if (!argv.includes(PEERS_ONLY) && !argv.includes('--help')) {
    console.log(`node ${process.version}, ${(await import('node:os')).cpus().length} CPUs`)
    await ackLatency()
    await docLoad()
    await memory()
  }
  await peers(peerArgs)
}
