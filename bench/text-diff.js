// `npm run bench -- diff`: how long `PUT /content` takes to turn a text into edits (text-diff.js),
// for the changes a formatter or a bot makes and for the worst a request can send. The figures of
// docs/PERFORMANCE.md, "Server edits". Each case runs after a warm-up call; the median of RUNS.
import { editsBetween } from '../server/documents/text-diff.js'

const RUNS = 5

/** Deterministic random text, so runs compare. @param {number} seed */
function random (seed) {
  let state = seed
  return () => {
    state = (state * 1103515245 + 12345) % 2147483648
    return state / 2147483648
  }
}

/** @param {() => number} next @param {number} length */
const word = (next, length) => Array.from({ length }, () => String.fromCharCode(97 + Math.floor(next() * 26))).join('')

/** A source file of `count` lines, nested two spaces a level. @param {number} count */
function source (count) {
  const next = random(count)
  return Array.from({ length: count }, (_, i) => `${'  '.repeat(i % 4)}const ${word(next, 8)} = ${word(next, 20)}(${i})`).join('\n')
}

/** @param {string} text */
const reindented = text => text.split('\n').map(line => '  ' + line).join('\n')

/** @param {string} text */
const shuffled = (text) => {
  const next = random(7)
  return text.split('\n').map(line => ({ line, key: next() })).sort((a, b) => a.key - b.key).map(({ line }) => line).join('\n')
}

/** @param {number} bytes @param {number} lineLength @param {number} seed */
function randomText (bytes, lineLength, seed) {
  const next = random(seed)
  const lines = []
  for (let size = 0; size < bytes; size += lineLength + 1) lines.push(word(next, lineLength))
  return lines.join('\n')
}

const CASES = [
  { change: 'Every line re-indented', before: () => source(3000), after: reindented },
  { change: 'Every line re-indented', before: () => source(10000), after: reindented },
  { change: 'The lines shuffled', before: () => source(10000), after: shuffled },
  { change: 'Unrelated random text, lines of 10 characters', before: () => randomText(2e6, 10, 1), after: () => randomText(2e6, 10, 2) },
  { change: 'Unrelated random lines of 1,000 characters', before: () => randomText(2e6, 1000, 3), after: () => randomText(2e6, 1000, 4) }
]

/** @param {string[]} argv */
export async function main (argv) {
  if (argv.length > 0) {
    process.stderr.write('bench diff: takes no options\n')
    process.exitCode = 2
    return
  }
  console.log(`node ${process.version}; median of ${RUNS} runs after a warm-up\n`)
  console.log('| Change | Text | Edits | Time |\n|---|---|---|---|')
  for (const { change, before, after } of CASES) {
    const old = before()
    const text = after(old)
    const edits = editsBetween(old, text)
    const times = []
    for (let i = 0; i < RUNS; i++) {
      const started = performance.now()
      editsBetween(old, text)
      times.push(performance.now() - started)
    }
    times.sort((a, b) => a - b)
    const lines = old.split('\n').length
    console.log(`| ${change} | ${lines.toLocaleString('en')} lines, ${Math.round(old.length / 1024)} KiB | ${edits.length.toLocaleString('en')} | ${times[Math.floor(RUNS / 2)].toFixed(0)} ms |`)
  }
}
