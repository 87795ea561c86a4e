#!/usr/bin/env node
// `npm run peers -- [options]`: the comparison of Tandem with its peers. Parse the options, run
// every system at every load with a progress line on stderr, keep peers.md and peers.json, and
// print the tables (or the JSON with --json) on stdout.
import { mkdir, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { optionsOrHelp } from '../../loadtest/options.js'
import { createProgress } from '../../loadtest/progress.js'
import { parsePeerOptions, peerHelpText } from './options.js'
import { loadsOf, runPeerBench } from './run.js'
import { renderPeerTables } from './table.js'

const options = optionsOrHelp('peers', process.argv.slice(2), { parse: parsePeerOptions, helpText: peerHelpText })
if (!options) process.exit()

const progress = createProgress(process.stderr, { levels: loadsOf(options).length * options.systems.length * options.runs })
const bench = await runPeerBench(options, { onProgress: progress.update, onNote: progress.note })
progress.done()
const json = JSON.stringify(bench, null, 2) + '\n'
const markdown = renderPeerTables(bench)
const dir = resolve(options.out, `peers-${bench.startedAt.replace(/[:.]/g, '-')}`)
await mkdir(dir, { recursive: true })
await writeFile(join(dir, 'peers.json'), json)
await writeFile(join(dir, 'peers.md'), markdown)
process.stdout.write(options.json ? json : '\n' + markdown)
process.stderr.write(`Results written to ${dir}\n`)
