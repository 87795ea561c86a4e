#!/usr/bin/env node
// `npm run loadtest -- [options]`: parse the options, run the sweep with a live progress line on
// stderr, write the report files, and print the report (markdown tables, or JSON with --json) on stdout.
import { OptionError, helpText, parseOptions } from './options.js'
import { createProgress } from './progress.js'
import { formatMs } from './report/format.js'
import { renderMarkdown } from './report/markdown.js'
import { writeReport } from './report/write.js'
import { runLoadTest } from './run.js'

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

const progress = createProgress(process.stderr, { levels: options.editors.length })
try {
  const report = await runLoadTest(options, {
    onProgress: progress.update,
    onNote: progress.note,
    onLevel: (level) => progress.note(`${level.editors} editors: ack p99 ${formatMs(level.ackMs?.p99)} ms, broadcast p99 ${formatMs(level.broadcast.latencyMs?.p99)} ms, ` +
      `${level.updates.sent} sent, ${level.updates.timedOut + level.updates.refused} errors, ${level.broadcast.lost} lost, ` +
      `${level.convergence.converged ? 'converged' : 'DIVERGED'}, SLOs ${level.slo.pass ? 'met' : 'missed'}`)
  }, argv)
  progress.done()
  const files = await writeReport(report, options.out)
  process.stdout.write(options.json ? JSON.stringify(report, null, 2) + '\n' : renderMarkdown(report))
  process.stderr.write(`Report written to ${files.dir}\n`)
} catch (err) {
  progress.done()
  process.stderr.write(`loadtest: ${/** @type {Error} */ (err).stack ?? err}\n`)
  process.exit(1)
}
