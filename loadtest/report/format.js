// Number formats shared by the markdown report, the console and the tests that compare the two.

/** Milliseconds with three significant figures or so; a dash when there is no value. @param {number | null | undefined} ms */
export function formatMs (ms) {
  if (ms === null || ms === undefined) return '–'
  if (ms < 10) return ms.toFixed(2)
  if (ms < 100) return ms.toFixed(1)
  return Math.round(ms).toString()
}

/** @param {number | null | undefined} value @param {number} [digits] */
export function formatNumber (value, digits = 0) {
  return value === null || value === undefined ? '–' : value.toFixed(digits)
}

/** @param {number | null | undefined} percent */
export const formatPercent = percent => percent === null || percent === undefined ? '–' : `${Math.round(percent)}%`

/** @param {number} bytes */
export function formatBytes (bytes) {
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)} MB`
  if (bytes >= 1e3) return `${(bytes / 1e3).toFixed(1)} kB`
  return `${bytes} B`
}

/** A duration as people say it: `3 min 40 s`, `40 s`, `1 h 5 min`. @param {number} ms */
export function formatDuration (ms) {
  const seconds = Math.round(ms / 1000)
  /** @type {[number, string][]} */
  const units = [[Math.floor(seconds / 3600), 'h'], [Math.floor(seconds / 60) % 60, 'min'], [seconds % 60, 's']]
  const parts = units.filter(([value]) => value > 0).map(([value, unit]) => `${value} ${unit}`)
  return parts.length === 0 ? '0 s' : parts.join(' ')
}
