// The chart of the report: p50 and p99 of ACK and broadcast latency against editors, as a plain SVG
// line chart (no dependencies, readable in a browser and on GitHub).

const WIDTH = 720
const HEIGHT = 400
const MARGIN = { top: 40, right: 170, bottom: 50, left: 70 }
const SERIES = [
  { label: 'ACK p50', color: '#1f77b4', dash: '', value: (/** @type {ChartLevel} */ level) => level.ackMs?.p50 },
  { label: 'ACK p99', color: '#1f77b4', dash: '6 4', value: (/** @type {ChartLevel} */ level) => level.ackMs?.p99 },
  { label: 'broadcast p50', color: '#ff7f0e', dash: '', value: (/** @type {ChartLevel} */ level) => level.broadcast.latencyMs?.p50 },
  { label: 'broadcast p99', color: '#ff7f0e', dash: '6 4', value: (/** @type {ChartLevel} */ level) => level.broadcast.latencyMs?.p99 }
]

/**
 * @typedef {{ editors: number, ackMs: { p50: number, p99: number } | null, broadcast: { latencyMs: { p50: number, p99: number } | null } }} ChartLevel
 */

/**
 * @param {ChartLevel[]} levels
 * @param {string} title
 * @param {import('../verdict.js').Slo} [slo] drawn as a horizontal line per SLO, in its series' colour
 */
export function renderChart (levels, title, slo) {
  const sorted = [...levels].sort((a, b) => a.editors - b.editors)
  const plotWidth = WIDTH - MARGIN.left - MARGIN.right
  const plotHeight = HEIGHT - MARGIN.top - MARGIN.bottom
  const xs = sorted.map(level => level.editors)
  const [xMin, xMax] = [Math.min(...xs), Math.max(...xs)]
  const values = sorted.flatMap(level => SERIES.map(series => series.value(level))).filter(v => typeof v === 'number')
  const sloLines = slo
    ? [{ label: `ACK p99 SLO ${trim(slo.ackP99Ms)} ms`, ms: slo.ackP99Ms, color: SERIES[1].color },
        { label: `broadcast p99 SLO ${trim(slo.broadcastP99Ms)} ms`, ms: slo.broadcastP99Ms, color: SERIES[3].color }]
    : []
  // The scale reaches the SLOs, so the chart shows the headroom below them.
  const yMax = niceCeiling(Math.max(1, ...values, ...sloLines.map(line => line.ms)))
  const x = (/** @type {number} */ editors) => MARGIN.left + (xMax === xMin ? plotWidth / 2 : (editors - xMin) / (xMax - xMin) * plotWidth)
  const y = (/** @type {number} */ ms) => MARGIN.top + plotHeight - ms / yMax * plotHeight

  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`,
    `<text x="${MARGIN.left}" y="24" font-size="14" font-weight="bold">${escape(title)}</text>`
  ]
  for (let i = 0; i <= 5; i++) {
    const ms = yMax * i / 5
    parts.push(`<line x1="${MARGIN.left}" x2="${MARGIN.left + plotWidth}" y1="${y(ms)}" y2="${y(ms)}" stroke="#e5e5e5"/>`,
      `<text x="${MARGIN.left - 8}" y="${y(ms) + 4}" text-anchor="end">${trim(ms)}</text>`)
  }
  for (const editors of xs) {
    parts.push(`<text x="${x(editors)}" y="${MARGIN.top + plotHeight + 18}" text-anchor="middle">${editors}</text>`)
  }
  parts.push(
    `<line x1="${MARGIN.left}" x2="${MARGIN.left + plotWidth}" y1="${MARGIN.top + plotHeight}" y2="${MARGIN.top + plotHeight}" stroke="black"/>`,
    `<line x1="${MARGIN.left}" x2="${MARGIN.left}" y1="${MARGIN.top}" y2="${MARGIN.top + plotHeight}" stroke="black"/>`,
    `<text x="${MARGIN.left + plotWidth / 2}" y="${HEIGHT - 10}" text-anchor="middle">editors</text>`,
    `<text x="18" y="${MARGIN.top + plotHeight / 2}" text-anchor="middle" transform="rotate(-90 18 ${MARGIN.top + plotHeight / 2})">latency (ms)</text>`
  )
  for (const line of sloLines) {
    parts.push(`<line data-slo="${line.label}" x1="${MARGIN.left}" x2="${MARGIN.left + plotWidth}" y1="${y(line.ms)}" y2="${y(line.ms)}" stroke="${line.color}" stroke-width="1" stroke-dasharray="2 3"/>`,
      `<text x="${MARGIN.left + plotWidth - 4}" y="${y(line.ms) - 4}" text-anchor="end" fill="${line.color}">${line.label}</text>`)
  }
  SERIES.forEach((series, i) => {
    const points = sorted.filter(level => typeof series.value(level) === 'number')
      .map(level => `${x(level.editors).toFixed(1)},${y(/** @type {number} */ (series.value(level))).toFixed(1)}`)
    const dash = series.dash ? ` stroke-dasharray="${series.dash}"` : ''
    if (points.length > 0) {
      parts.push(`<polyline data-series="${series.label}" fill="none" stroke="${series.color}" stroke-width="2"${dash} points="${points.join(' ')}"/>`)
      for (const point of points) {
        const [cx, cy] = point.split(',')
        parts.push(`<circle cx="${cx}" cy="${cy}" r="3" fill="${series.color}"/>`)
      }
    }
    parts.push(...legendEntry(MARGIN.left + plotWidth + 20, MARGIN.top + 10 + i * 20, series.color, dash, series.label))
  })
  parts.push('</svg>')
  return parts.join('\n') + '\n'
}

/**
 * One line of a chart's legend: a stroke in the series' colour and its label.
 * @param {number} x @param {number} y @param {string} color @param {string} dash the stroke-dasharray attribute, or '' @param {string} label
 */
export function legendEntry (x, y, color, dash, label) {
  return [`<line x1="${x}" x2="${x + 28}" y1="${y}" y2="${y}" stroke="${color}" stroke-width="2"${dash}/>`,
    `<text x="${x + 36}" y="${y + 4}">${label}</text>`]
}

/** 1, 2 or 5 times a power of ten, at or above `value`. @param {number} value */
export function niceCeiling (value) {
  const power = 10 ** Math.floor(Math.log10(value))
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power
  return 10 * power
}

/** @param {number} value */
const trim = value => Number(value.toPrecision(3)).toString()

/** @param {string} text */
const escape = text => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
