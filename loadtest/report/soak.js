import { formatNumber } from './format.js'
import { table } from './table.js'
import { legendEntry, niceCeiling } from './svg.js'

// The soak's part of the report: figures first (growth while editing, return to baseline after
// unload), then the series, thinned to at most MAX_ROWS rows (report.json keeps every sample), and a
// chart of RSS, heap and loaded documents over time.

const MAX_ROWS = 40
const MB = 1024 * 1024
const WIDTH = 720
const HEIGHT = 400
const MARGIN = { top: 40, right: 170, bottom: 50, left: 70 }

/** @param {number | null | undefined} percent */
const signed = percent => percent === null || percent === undefined ? '–' : `${percent >= 0 ? '+' : ''}${percent.toFixed(1)}%`
/** @param {number} bytes */
const mb = bytes => formatNumber(bytes / MB, 1)

/** @param {import('../soak.js').SoakResult} soak */
export function soakMarkdown (soak) {
  const { slope, unload, baseline } = soak
  const turnover = soak.cycles > 1
    ? `Rooms renewed every ${formatNumber(soak.cycleSeconds / 60, 1)} min (${soak.cycles} cycles); growth compares the ends of cycles. `
    : ''
  const growth = slope
    ? `${turnover}From minute ${formatNumber(slope.fromMinute, 1)} of the editing to its end, RSS grew ${signed(slope.rssPercent)} ` +
      `(${formatNumber(slope.rssBytesPerHour / MB, 1)} MB/hour) and the heap ${signed(slope.heapPercent)}.`
    : 'Too few samples while editing to measure growth.'
  const back = unload && baseline
    ? `${unload.unloaded ? 'Documents unloaded' : `**${unload.documentsLeft} documents still loaded**`} after ` +
      `${formatNumber(soak.unloadWaitSeconds, 0)} s; ${soak.settleSeconds} s later RSS was ${mb(unload.rssBytes)} MB (${signed(unload.rssPercentVsBaseline)} vs the idle ` +
      `${mb(baseline.rssBytes)} MB) and the heap ${mb(unload.heapUsedBytes)} MB (${signed(unload.heapPercentVsBaseline)} vs ${mb(baseline.heapUsedBytes)} MB).`
    : 'No sample after the unload.'
  const step = Math.max(1, Math.ceil(soak.series.length / MAX_ROWS))
  const rows = soak.series.filter((_, i) => i % step === 0 || i === soak.series.length - 1)
  return [
    `## Soak (${formatNumber(soak.durationSeconds / 60, 1)} min, a sample every ${soak.sampleSeconds} s)`,
    `${growth} ${back} Peak: RSS ${mb(soak.peak.rssBytes)} MB, heap ${mb(soak.peak.heapUsedBytes)} MB, ${soak.peak.documents} documents loaded.`,
    '![RSS, heap and loaded documents over the soak](soak.svg)',
    table(['Time (s)', 'Cycle', 'Phase', 'RSS (MB)', 'Heap used (MB)', 'Documents loaded', 'Editors'],
      rows.map(s => [formatNumber(s.seconds, 0), s.cycle || '–', s.phase, mb(s.rssBytes), mb(s.heapUsedBytes), s.documents, s.editors]))
  ].join('\n\n')
}

/**
 * RSS and heap (MB, left axis) and loaded documents (right axis) against minutes.
 * @param {import('../soak.js').SoakResult} soak
 * @param {string} title
 */
export function renderSoakChart (soak, title) {
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom
  const series = soak.series
  const tMax = Math.max(1, ...series.map(s => s.seconds)) / 60
  const mbMax = niceCeiling(Math.max(1, ...series.map(s => s.rssBytes / MB)))
  const docMax = niceCeiling(Math.max(1, ...series.map(s => s.documents)))
  const x = (/** @type {number} */ seconds) => MARGIN.left + seconds / 60 / tMax * plotWidth
  const y = (/** @type {number} */ value, /** @type {number} */ top) => MARGIN.top + plotHeight - value / top * plotHeight
  const lines = [
    { label: 'RSS (MB)', color: '#1f77b4', dash: '', y: (/** @type {import('../memory-series.js').MemorySample} */ s) => y(s.rssBytes / MB, mbMax) },
    { label: 'heap used (MB)', color: '#ff7f0e', dash: '', y: (/** @type {import('../memory-series.js').MemorySample} */ s) => y(s.heapUsedBytes / MB, mbMax) },
    { label: 'documents (right)', color: '#2ca02c', dash: '6 4', y: (/** @type {import('../memory-series.js').MemorySample} */ s) => y(s.documents, docMax) }
  ]
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${MARGIN.left}" y="24" font-size="14" font-weight="bold">${escape(title)}</text>`
  ]
  for (let i = 0; i <= 5; i++) {
    const ty = y(mbMax * i / 5, mbMax)
    parts.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left + plotWidth}" y1="${ty}" y2="${ty}" stroke="#e5e5e5"/>`,
      `<text x="${MARGIN.left - 8}" y="${ty + 4}" text-anchor="end">${trim(mbMax * i / 5)}</text>`,
      `<text x="${MARGIN.left + plotWidth + 8}" y="${ty + 4}">${trim(docMax * i / 5)}</text>`)
  }
  for (let i = 0; i <= 5; i++) {
    parts.push(`<text x="${MARGIN.left + plotWidth * i / 5}" y="${MARGIN.top + plotHeight + 18}" text-anchor="middle">${trim(tMax * i / 5)}</text>`)
  }
  parts.push(
    `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotWidth}" y1="${MARGIN.top + plotHeight}" y2="${MARGIN.top + plotHeight}" stroke="black"/>`,
    `<line x1="${MARGIN.left}" x2="${MARGIN.left}" y1="${MARGIN.top}" y2="${MARGIN.top + plotHeight}" stroke="black"/>`,
    `<text x="${MARGIN.left + plotWidth / 2}" y="${HEIGHT - 10}" text-anchor="middle">minutes</text>`,
    `<text x="18" y="${MARGIN.top + plotHeight / 2}" text-anchor="middle" transform="rotate(-90 18 ${MARGIN.top + plotHeight / 2})">MB</text>`
  )
  lines.forEach((line, i) => {
    const dash = line.dash ? ` stroke-dasharray="${line.dash}"` : ''
    const points = series.map(s => `${x(s.seconds).toFixed(1)},${line.y(s).toFixed(1)}`).join(' ')
    parts.push(`<polyline data-series="${line.label}" fill="none" stroke="${line.color}" stroke-width="2"${dash} points="${points}"/>`)
    parts.push(...legendEntry(MARGIN.left + plotWidth + 40, MARGIN.top + 10 + i * 20, line.color, dash, line.label))
  })
  parts.push('</svg>')
  return parts.join('\n') + '\n'
}

/** @param {number} value */
const trim = value => Number(value.toPrecision(3)).toString()

/** @param {string} text */
const escape = text => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
