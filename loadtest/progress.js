import { formatMs } from './report/format.js'

// The live progress line. On a terminal it rewrites one line in place; otherwise (CI logs, pipes) it
// prints a plain line when the phase changes and every PLAIN_EVERY_MS while measuring.

const PLAIN_EVERY_MS = 5000

/**
 * @param {NodeJS.WriteStream} stream
 * @param {{ levels: number }} run
 */
export function createProgress (stream, { levels }) {
  const live = Boolean(stream.isTTY)
  let lastPhase = ''
  let lastPlain = 0
  let shown = false
  let level = 0

  return {
    /** @param {import('./level.js').Progress} progress */
    update (progress) {
      if (progress.phase === 'creating sessions') level++
      const text = describe(progress, level, levels)
      if (live) {
        stream.write(`\r\x1b[2K${text}`)
        shown = true
        return
      }
      const now = Date.now()
      if (progress.phase !== lastPhase || (progress.phase === 'measuring' && now - lastPlain >= PLAIN_EVERY_MS)) {
        stream.write(text + '\n')
        lastPhase = progress.phase
        lastPlain = now
      }
    },

    /** A line of its own (a finished level, the REST section). @param {string} text */
    note (text) {
      if (shown) stream.write('\r\x1b[2K')
      shown = false
      stream.write(text + '\n')
    },

    done () {
      if (shown) stream.write('\n')
      shown = false
    }
  }
}

/**
 * @param {import('./level.js').Progress} progress
 * @param {number} level
 * @param {number} levels
 */
function describe (progress, level, levels) {
  const parts = [`level ${level}/${levels}`, `${progress.editors} editors`, progress.phase]
  if (progress.elapsedMs !== undefined && progress.phaseMs !== undefined) {
    parts[2] += ` ${Math.min(progress.phaseMs, progress.elapsedMs) / 1000 | 0}/${progress.phaseMs / 1000 | 0} s`
  }
  if (progress.ackP99 !== undefined) parts.push(`ack p99 ${formatMs(progress.ackP99)} ms`, `broadcast p99 ${formatMs(progress.broadcastP99 ?? null)} ms`)
  if (progress.errors !== undefined) parts.push(`sent ${progress.sent}`, `errors ${progress.errors}`)
  return parts.join(' · ')
}
