// `npm run bench`: the single-process micro-benchmarks quoted in docs/PERFORMANCE.md (ACK latency,
// document load, memory, live heap, the update path's CPU, a Yjs transaction's cost by clients).
// `npm run bench -- scale` runs the scale-out bench (bench/scale.js) instead, with the arguments
// after `scale`; `npm run bench -- hostile` what small hostile inputs cost a server (bench/hostile.js);
// `npm run bench -- footprint` what an idle and a deleted document leave in Redis (bench/redis-footprint.js);
// `npm run bench -- history` what a session's history costs and how fast it reads (bench/history.js);
// `npm run bench -- diff` how long a server edit's diff takes (bench/text-diff.js).
// Each bench is loaded only when it runs, so a run loads only what it measures.

const SCALE = 'scale'
const HOSTILE = 'hostile'
const FOOTPRINT = 'footprint'
const HISTORY = 'history'
const DIFF = 'diff'
const argv = process.argv.slice(2)

if (argv[0] === SCALE) {
  const { main: scale } = await import('./scale.js')
  await scale(argv.slice(1))
} else if (argv[0] === HOSTILE) {
  const { main: hostile } = await import('./hostile.js')
  await hostile(argv.slice(1))
  process.exit(0)
} else if (argv[0] === FOOTPRINT) {
  const { main: footprint } = await import('./redis-footprint.js')
  await footprint(argv.slice(1))
} else if (argv[0] === HISTORY) {
  const { main: history } = await import('./history.js')
  await history(argv.slice(1))
} else if (argv[0] === DIFF) {
  const { main: diff } = await import('./text-diff.js')
  await diff(argv.slice(1))
} else if (argv.length > 0) {
  process.stderr.write(`bench: unexpected ${JSON.stringify(argv[0])}. Usage: npm run bench [-- scale [options] | -- hostile [--root DIR] | -- footprint [options] | -- history [--hours N] [--store leveldb|redis|both] | -- diff]\n`)
  process.exitCode = 2
} else {
  console.log(`node ${process.version}, ${(await import('node:os')).cpus().length} CPUs`)
  await (await import('./ack-latency.js')).run()
  await (await import('./doc-load.js')).run()
  await (await import('./memory.js')).run()
  await (await import('./heap.js')).run()
  await (await import('./update-path.js')).run()
  await (await import('./doc-clients.js')).run()
}
