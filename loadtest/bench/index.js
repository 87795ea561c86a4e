// `npm run bench`: the single-process micro-benchmarks quoted in the README, then the comparison
// with peer systems (bench/peers.js). `npm run bench -- --peers-only` runs the comparison alone;
// every other argument goes to it (`npm run bench -- --help` lists them). `npm run bench -- scale`
// runs the scale-out bench (bench/scale.js) alone instead, with the arguments after `scale`.
// Each bench is loaded only when it runs: the micro-benchmarks use the tests' helpers, which import
// node:test, and from Node 22 a process that imports node:test prints the runner's summary on
// stdout as it exits, which would follow the JSON of `scale --json`.

const PEERS_ONLY = '--peers-only'
const SCALE = 'scale'
const argv = process.argv.slice(2)

if (argv[0] === SCALE) {
  const { main: scale } = await import('./scale.js')
  await scale(argv.slice(1))
} else {
  const peerArgs = argv.filter(arg => arg !== PEERS_ONLY)
  if (!argv.includes(PEERS_ONLY) && !argv.includes('--help')) {
    console.log(`node ${process.version}, ${(await import('node:os')).cpus().length} CPUs`)
    await (await import('./ack-latency.js')).run()
    await (await import('./doc-load.js')).run()
    await (await import('./memory.js')).run()
  }
  const { main: peers } = await import('./peers.js')
  await peers(peerArgs)
}
