// Parsers for option values. Each takes the raw string and returns the value or throws an Error whose
// message says what was expected; `options.js` prefixes it with the option's name.

const TIME_UNITS_MS = { ms: 1, s: 1000, m: 60000 }
const SIZE_UNITS = { '': 1, b: 1, kb: 1e3, mb: 1e6, kib: 1024, mib: 1024 * 1024 }

/**
 * A duration: a number of seconds, or a number with `ms`, `s` or `m`. Returns milliseconds.
 * @param {{ min?: number, max: number }} bounds in milliseconds
 */
export function duration ({ min = 0, max }) {
  return (/** @type {string} */ raw) => {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(raw.trim())
    if (!match) throw new Error('expected a duration such as 30, 30s, 500ms or 2m')
    const ms = Number(match[1]) * TIME_UNITS_MS[/** @type {'ms' | 's' | 'm'} */ (match[2] ?? 's')]
    if (ms < min || ms > max) throw new Error(`expected ${min / 1000}..${max / 1000} s`)
    return Math.round(ms)
  }
}

/**
 * A byte size: `1MB` (10^6), `512KiB` (2^10), or a plain number of bytes.
 * @param {{ max: number }} bounds in bytes
 */
export function size ({ max }) {
  return (/** @type {string} */ raw) => {
    const match = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(raw.trim())
    const unit = match?.[2].toLowerCase()
    if (!match || unit === undefined || !(unit in SIZE_UNITS)) throw new Error('expected a size such as 1MB, 256KiB or 1000')
    const bytes = Math.round(Number(match[1]) * SIZE_UNITS[/** @type {keyof typeof SIZE_UNITS} */ (unit)])
    if (bytes > max) throw new Error(`expected at most ${max} bytes`)
    return bytes
  }
}

/** @param {number} min @param {number} max */
export function integer (min, max) {
  return (/** @type {string} */ raw) => {
    if (!/^\d+$/.test(raw.trim())) throw new Error('expected a whole number')
    const value = Number(raw)
    if (value < min || value > max) throw new Error(`expected ${min}..${max}`)
    return value
  }
}

/** @param {number} min @param {number} max */
export function number (min, max) {
  return (/** @type {string} */ raw) => {
    if (!/^\d+(\.\d+)?$/.test(raw.trim())) throw new Error('expected a number')
    const value = Number(raw)
    if (value < min || value > max) throw new Error(`expected ${min}..${max}`)
    return value
  }
}

/** A comma-separated list of whole numbers, such as `10,25,50`. @param {number} min @param {number} max */
export function integerList (min, max) {
  const one = integer(min, max)
  return (/** @type {string} */ raw) => {
    const values = raw.split(',').map(part => one(part))
    if (values.length === 0) throw new Error('expected at least one number')
    return values
  }
}

/** @template {string} T @param {readonly T[]} allowed */
export function oneOf (allowed) {
  return (/** @type {string} */ raw) => {
    if (!allowed.includes(/** @type {T} */ (raw))) throw new Error(`expected one of ${allowed.join(', ')}`)
    return /** @type {T} */ (raw)
  }
}

/** @param {string} raw */
export function nonEmpty (raw) {
  if (raw.trim() === '') throw new Error('must not be empty')
  return raw
}

/** An http(s) URL, returned without a trailing slash. @param {string} raw */
export function httpUrl (raw) {
  let url
  try {
    url = new URL(raw)
  } catch {
    throw new Error('expected a URL such as http://localhost:3000')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('expected an http or https URL')
  return url.href.replace(/\/$/, '')
}

/** A comma-separated list of http(s) URLs, each as `httpUrl` returns it. @param {string} raw */
export function httpUrlList (raw) {
  const urls = raw.split(',').map(part => httpUrl(part.trim()))
  if (new Set(urls).size !== urls.length) throw new Error('a URL is listed twice')
  return urls
}

/** Whether a URL points at this machine. @param {string} href */
export function isLoopback (href) {
  const host = new URL(href).hostname
  return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host)
}
