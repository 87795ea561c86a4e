#!/usr/bin/env node
// `npm run loadtest -- [options]`: parse the options, run the sweep (--runs times) with a live
// progress line on stderr, write each run's report files, and print the report (markdown tables, or
// JSON with --json) on stdout; after several runs, their medians instead (runs.md, runs.json).
import { UnreachableError } from './api.js'
import { OptionError, helpText, parseOptions } from './options.js'
import { createProgress } from './progress.js'
import { formatMs } from './report/format.js'
import { renderMarkdown } from './report/markdown.js'
import { renderRuns } from './report/runs.js'
import { writeReport, writeRuns } from './report/write.js'
import { runLoadTest } from './run.js'
import { summarizeRuns } from './runs.js'

const argv = process.argv.slice(2)
let options
try {
  options = parseOptions(argv)
} catch (err) {
  if (!(err instanceof OptionError)) throw err
  process.stderr.write(`loadtest: ${err.message}\nRun with --help for the options.\n`)
  process.exit(2)
}
if (options.help) {
  process.stdout.write(helpText())
  process.exit(0)
}

const progress = createProgress(process.stderr, { levels: options.editors.length * options.runs })
/** @type {import('./run.js').RunHooks} */
const hooks = {
  onProgress: progress.update,
  onNote: progress.note,
  onLevel: (level) => progress.note(`${level.editors} editors: ack p99 ${formatMs(level.ackMs?.p99)} ms, broadcast p99 ${formatMs(level.broadcast.latencyMs?.p99)} ms, ` +
    `${level.updates.sent} sent, ${level.updates.timedOut + level.updates.refused} errors, ${level.broadcast.lost} lost, ` +
    `${convergenceWord(level.convergence.converged)}, SLOs ${level.slo.pass ? 'met' : 'missed'}`)
}
try {
  const reports = []
  const dirs = []
  for (let run = 1; run <= options.runs; run++) {
    if (options.runs > 1) progress.note(`Run ${run} of ${options.runs}`)
    reports.push(await runLoadTest(options, hooks, argv))
    dirs.push((await writeReport(reports[reports.length - 1], options.out)).dir)
  }
  progress.done()
  if (options.runs === 1) {
    process.stdout.write(options.json ? JSON.stringify(reports[0], null, 2) + '\n' : renderMarkdown(reports[0]))
    process.stderr.write(`Report written to ${dirs[0]}\n`)
  } else {
    const summary = summarizeRuns(reports, dirs)
    const dir = await writeRuns(summary, options.out)
    process.stdout.write(options.json ? JSON.stringify(summary, null, 2) + '\n' : renderRuns(summary))
    process.stderr.write(`Reports written to ${dirs.join(', ')}; their medians to ${dir}\n`)
  }
} catch (err) {
  progress.done()
  if (err instanceof UnreachableError) {
    // One line an operator can act on; a server this run started and lost is another story.
    const hint = options.spawn ? '' : ': start one there (npm start), point --url at one, or let the load test start its own (--spawn single)'
    process.stderr.write(`loadtest: ${err.message}${hint}\n`)
  } else {
    process.stderr.write(`loadtest: ${/** @type {Error} */ (err).stack ?? err}\n`)
  }
  process.exit(1)
}

/** @param {boolean | null} converged null: not checked (`--apply none`) */
function convergenceWord (converged) {
  if (converged === null) return 'convergence not checked'
  return converged ? 'converged' : 'DIVERGED'
}
