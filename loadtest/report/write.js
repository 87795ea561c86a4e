import { mkdir, writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { renderMarkdown } from './markdown.js'
import { renderRuns } from './runs.js'
import { renderSoakChart } from './soak.js'
import { renderChart } from './svg.js'

/**
 * Writes report.md, report.json and chart.svg (and soak.svg after a soak) into `<out>/<timestamp>/`;
 * returns their paths.
 * @param {import('../run.js').Report} report
 * @param {string} out
 */
export async function writeReport (report, out) {
  const dir = resolve(out, report.startedAt.replace(/[:.]/g, '-'))
  await mkdir(dir, { recursive: true })
  const files = {
    markdown: join(dir, 'report.md'),
    json: join(dir, 'report.json'),
    chart: join(dir, 'chart.svg')
  }
  await writeFile(files.markdown, renderMarkdown(report))
  await writeFile(files.json, JSON.stringify(report, null, 2) + '\n')
  await writeFile(files.chart, renderChart(report.levels, `Tandem: latency against editors, ${report.target.description}`, report.verdict.slo))
  if (report.soak) {
    const soak = join(dir, 'soak.svg')
    await writeFile(soak, renderSoakChart(report.soak, `Tandem soak: memory and documents over time, ${report.target.description}`))
    return { dir, ...files, soak }
  }
  return { dir, ...files }
}

/**
 * Writes runs.md and runs.json into `<out>/runs-<timestamp>/`; returns the directory.
 * @param {import('../runs.js').RunsSummary} summary
 * @param {string} out
 */
export async function writeRuns (summary, out) {
  const dir = resolve(out, `runs-${summary.startedAt.replace(/[:.]/g, '-')}`)
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, 'runs.md'), renderRuns(summary))
  await writeFile(join(dir, 'runs.json'), JSON.stringify(summary, null, 2) + '\n')
  return dir
}
