import { parseArgs } from 'node:util'
import { plannedTime } from './planned-time.js'
import { formatDuration } from './report/format.js'
import { TANDEM_CLIENTS } from './target.js'
import { duration, httpUrlList, integer, integerList, isLoopback, nonEmpty, number, oneOf, size } from './values.js'

// Every option of the load test in one place: flag, default, unit and meaning. `parseOptions` parses
// argv once, validates, fails naming the flag, and freezes. `--help` is generated from this table.

const SECOND = 1000
// A soak's one level when --editors is not given: 60 rooms of 5 with cursors, a realistic steady load.
const SOAK_EDITORS = 300
const HELP_COLUMNS = 100

/**
 * @typedef {object} Options
 * @property {string[]} url the server under test when not spawned: its processes, editors spread over
 *   them by slot. Default http://localhost:3000.
 * @property {'single' | 'cluster' | null} spawn start the server: one process, or processes sharing one Redis. Default none.
 * @property {number} clusterWorkers server processes with `--spawn cluster`. Default 2.
 * @property {number[]} editors the levels of the sweep, in editors. Default 10,25,50,100,150.
 * @property {number} perRoom editors per document; Infinity puts each level in one document. Default 5.
 * @property {number} rate edits per second per editor. Default 5.
 * @property {number} durationMs measured window per level. Default 30 s.
 * @property {number} warmupMs editing before the window, excluded from the statistics. Default 10 s.
 * @property {number} payload characters inserted per synthetic edit. Default 8.
 * @property {number} ackTimeoutMs how long an update waits for its ACK before it counts as timed out. Default 5 s.
 * @property {number} awarenessRate cursor moves per second per editor (0 = none). Default 2.
 * @property {'all' | 'sample' | 'none'} apply which editors apply what they receive (the rest time
 *   it and drop it): all, one per room, or none. Default sample.
 * @property {string | null} trace editing-traces JSON file (optionally gzipped) to replay. Default none.
 * @property {number} docSize bytes of content seeded into every document. Default 0 (a small stub).
 * @property {boolean} joinStorm connect every editor of a level at once instead of over a ramp. Default false.
 * @property {number} workers load-generator threads (0 = sized from the load). Default 0.
 * @property {import('./target.js').TandemClient} client what the editors speak through: socket.io-client, as
 *   the shipped client, or the same bytes over a bare WebSocket. Default socket.io.
 * @property {number} restDurationMs autocannon time per REST endpoint (0 = skip). Default 5 s.
 * @property {number} sloAckP99Ms ACK p99 a level must meet. Default 50 ms.
 * @property {number} sloBroadcastP99Ms broadcast p99 a level must meet. Default 100 ms.
 * @property {string} out directory for the reports. Default loadtest/reports.
 * @property {boolean} json print the report as JSON instead of tables. Default false.
 * @property {boolean} keepSessions leave the sessions on the server after each level. Default false.
 * @property {string | null} apiKey sent as `Authorization: Bearer` on REST calls. Default none.
 * @property {string | null} token sent as the Socket.IO handshake's `auth.token`. Default none.
 * @property {string | null} metricsToken sent as `Authorization: Bearer` on /metrics scrapes. Default none.
 * @property {boolean} allowRemote allow a --url that is not loopback. Default false.
 * @property {number | null} soakMs soak mode: one level held this long while the server's memory is
 *   sampled, then every editor leaves and the documents unload. Default none (a sweep).
 * @property {number} soakCycleMs how long a soak's rooms live before new ones take their place. Default 5 min.
 * @property {number} soakSampleMs time between two memory samples of a soak. Default 5 s.
 * @property {number} soakUnloadWaitMs longest wait, after a soak, for the documents to unload. Default 2 min.
 * @property {number} soakSettleMs how long a soak keeps sampling once the documents unloaded. Default 3 min
 *   (the collection that gives the documents' heap back came 10 s after the unload in one 30-minute
 *   soak of 300 editors, and had not come 60 s after it in another).
 * @property {number} runs times the whole run is made, each with a report of its own, then the median
 *   of each figure per level. Default 1.
 */

/**
 * @typedef {object} OptionSpec
 * @property {string} key the option's name; its flag is the key in kebab case, without a trailing `Ms`
 * @property {string} [arg] placeholder of the value in --help; none for a boolean flag
 * @property {string} [default] as written on the command line
 * @property {(raw: string) => any} [parse]
 * @property {string} help
 */

/** @type {OptionSpec[]} */
export const OPTION_SPECS = [
  { key: 'url', arg: 'URL', default: 'http://localhost:3000', parse: httpUrlList, help: 'Server to test when not spawned. Loopback only unless --allow-remote. A comma-separated list names processes sharing one Redis: editor i of each room connects to URL (i mod count), REST and /metrics go to the first.' },
  { key: 'spawn', arg: 'MODE', parse: oneOf(/** @type {const} */ (['single', 'cluster'])), help: 'Start the server: `single` (node server/index.js on a free port, temp data dir) or `cluster` (one redis-server and --cluster-workers node server/index.js processes, each on its own port, editor i of each room on process i mod count), keeping history (HISTORY_RETENTION=1d unless the environment sets it). Stopped at the end.' },
  { key: 'clusterWorkers', arg: 'N', default: '2', parse: integer(1, 64), help: 'Server processes with --spawn cluster.' },
  { key: 'editors', arg: 'LIST', default: '10,25,50,100,150', parse: integerList(1, 5000), help: 'Levels of the sweep: editors connected at once, comma-separated.' },
  { key: 'perRoom', arg: 'K', default: '5', parse: perRoom, help: 'Editors per document (the last room of a level may be smaller); `all` puts each level in one document.' },
  { key: 'rate', arg: 'N', default: '5', parse: number(0.1, 10000), help: 'Edits per second per editor, each one Yjs update awaiting its ACK (starts jittered).' },
  { key: 'durationMs', arg: 'TIME', default: '30s', parse: duration({ min: SECOND, max: 3600 * SECOND }), help: 'Measured window per level (seconds, or 500ms, 2m).' },
  { key: 'warmupMs', arg: 'TIME', default: '10s', parse: duration({ max: 600 * SECOND }), help: 'Editing before each window, excluded from the statistics.' },
  { key: 'payload', arg: 'CHARS', default: '8', parse: integer(1, 100000), help: 'Characters inserted per synthetic edit (code text; deletes remove up to as many).' },
  { key: 'ackTimeoutMs', arg: 'TIME', default: '5s', parse: duration({ min: 100, max: 120 * SECOND }), help: 'An update without an ACK after this long counts as timed out.' },
  { key: 'apply', arg: 'WHICH', default: 'sample', parse: oneOf(/** @type {const} */ (['all', 'sample', 'none'])), help: 'Editors that apply the updates and cursors they receive, as a real editor does: `all`, `sample` (one per room; the others time what they receive and drop it, so a large room does not make the generator the bottleneck) or `none`. Convergence is checked for the editors that apply.' },
  { key: 'awarenessRate', arg: 'N', default: '2', parse: number(0, 100), help: 'Cursor moves per second per editor, as y-protocols awareness updates (0 = none).' },
  { key: 'trace', arg: 'FILE', parse: nonEmpty, help: 'Replay an editing trace ({startContent, endContent, txns}, .json or .json.gz) instead of synthetic edits: one transaction per edit, each editor in its own region of the document.' },
  { key: 'docSize', arg: 'SIZE', default: '0', parse: size({ max: 64 * 1024 * 1024 }), help: 'Seed every document with this much code (e.g. 1MB) that every joiner syncs.' },
  { key: 'joinStorm', help: 'Connect and sync every editor of a level at the same instant (reports time-to-synced) instead of over a short ramp.' },
  { key: 'workers', arg: 'N', default: 'auto', parse: workers, help: 'Load-generator threads; `auto` sizes them from the expected message rate.' },
  { key: 'client', arg: 'CLIENT', default: 'socket.io', parse: oneOf(/** @type {import('./target.js').TandemClient[]} */ (Object.keys(TANDEM_CLIENTS))), help: 'What the editors speak through: `socket.io`, socket.io-client as the shipped client uses it; `wire`, the same bytes over a bare WebSocket, which costs the generator less per message, so that a large level measures more of the server and less of the generator.' },
  { key: 'restDurationMs', arg: 'TIME', default: '5s', parse: duration({ max: 600 * SECOND }), help: 'autocannon time per REST endpoint (create, get, list, health, replace a text, read it as it was from history); 0 skips the REST section.' },
  { key: 'sloAckP99Ms', arg: 'MS', default: '50', parse: number(0.001, 1e6), help: 'SLO: ACK p99 in milliseconds a level must meet.' },
  { key: 'sloBroadcastP99Ms', arg: 'MS', default: '100', parse: number(0.001, 1e6), help: 'SLO: broadcast p99 in milliseconds a level must meet.' },
  { key: 'out', arg: 'DIR', default: 'loadtest/reports', parse: nonEmpty, help: 'Where to write <timestamp>/report.md, report.json and chart.svg.' },
  { key: 'json', help: 'Print the report as JSON on stdout instead of tables.' },
  { key: 'keepSessions', help: 'Leave each level\'s sessions on the server instead of deleting them.' },
  { key: 'apiKey', arg: 'KEY', parse: nonEmpty, help: 'Sent as `Authorization: Bearer KEY` on REST calls.' },
  { key: 'token', arg: 'TOKEN', parse: nonEmpty, help: 'Sent as the Socket.IO handshake\'s `auth: { token }`.' },
  { key: 'metricsToken', arg: 'TOKEN', parse: nonEmpty, help: 'Sent as `Authorization: Bearer TOKEN` on /metrics scrapes (the server\'s METRICS_TOKEN).' },
  { key: 'allowRemote', help: 'Allow a --url that is not on this machine.' },
  { key: 'soakMs', arg: 'TIME', parse: duration({ min: 10 * SECOND, max: 24 * 3600 * SECOND }), help: `Soak mode: one level of --editors (default ${SOAK_EDITORS}) held this long (e.g. 30m), in rooms renewed every --soak-cycle, while the server's RSS, heap and loaded documents are sampled from /metrics; then every editor leaves and the documents unload. The report adds the series, the growth from minute 5 to the end, and the return to the idle baseline.` },
  { key: 'soakCycleMs', arg: 'TIME', default: '5m', parse: duration({ min: 5 * SECOND, max: 24 * 3600 * SECOND }), help: 'How long a soak\'s rooms live: at the end of each cycle their editors leave, their sessions are deleted and new rooms take their place, as on a server where sessions begin and end (a document keeps its history, so one edited for the whole soak only grows). A cycle as long as the soak holds the same rooms throughout.' },
  { key: 'soakSampleMs', arg: 'TIME', default: '5s', parse: duration({ min: 100, max: 600 * SECOND }), help: 'Time between two memory samples of a soak.' },
  { key: 'soakUnloadWaitMs', arg: 'TIME', default: '2m', parse: duration({ min: 0, max: 3600 * SECOND }), help: 'Longest wait after a soak for the documents to unload (the server\'s DOC_IDLE_MS, 30 s by default, after the last editor left).' },
  { key: 'soakSettleMs', arg: 'TIME', default: '3m', parse: duration({ min: 0, max: 3600 * SECOND }), help: 'How long a soak keeps sampling once the documents unloaded, for the heap to be collected (an idle Node process runs that collection from seconds to about two minutes after its last allocations); its last sample is compared with the idle baseline.' },
  { key: 'runs', arg: 'N', default: '1', parse: integer(1, 100), help: 'Make the whole run N times (each on a server of its own with --spawn), keep each run\'s report, and add runs.md: each run\'s figures per level and their medians, so a comparison rests on medians rather than one noisy run.' },
  { key: 'help', help: 'Show this help.' }
]

export class OptionError extends Error {}

/**
 * A command's options from its arguments, or null once it has printed its help, or said on stderr
 * which flag is wrong (exit code 2).
 * @template {{ help: boolean }} T
 * @param {string} command its name in messages @param {string[]} argv
 * @param {{ parse: (argv: string[]) => T, helpText: () => string }} spec
 * @returns {T | null}
 */
export function optionsOrHelp (command, argv, { parse, helpText }) {
  let options
  try {
    options = parse(argv)
  } catch (err) {
    if (!(err instanceof OptionError)) throw err
    process.stderr.write(`${command}: ${err.message}\nRun with --help for the options.\n`)
    process.exitCode = 2
    return null
  }
  if (!options.help) return options
  process.stdout.write(helpText())
  return null
}

/** @param {string} key */
const flagOf = key => '--' + key.replace(/Ms$/, '').replace(/[A-Z]/g, c => '-' + c.toLowerCase())

/** @returns {Readonly<Options>} every option at its default */
export const defaultOptions = () => parseOptions([])

/**
 * @param {string[]} argv arguments after the script name
 * @returns {Readonly<Options & { help: boolean }>}
 */
export function parseOptions (argv) {
  const { options, given } = parseSpecs(OPTION_SPECS, argv)
  validate(options, given)
  return Object.freeze(options)
}

/**
 * Parses `argv` against `specs`: each flag's value parsed (or its default), booleans false unless
 * given; fails with an OptionError naming the flag.
 * @param {OptionSpec[]} specs
 * @param {string[]} argv
 * @returns {{ options: any, given: Record<string, unknown> }} `given`: the flags actually passed
 */
export function parseSpecs (specs, argv) {
  /** @type {Record<string, { type: 'string' | 'boolean' }>} */
  const config = {}
  for (const spec of specs) config[flagOf(spec.key).slice(2)] = { type: spec.parse ? 'string' : 'boolean' }
  let values
  try {
    values = parseArgs({ args: argv, options: config, strict: true, allowPositionals: false }).values
  } catch (err) {
    throw new OptionError(/** @type {Error} */ (err).message)
  }
  /** @type {any} */
  const options = {}
  for (const spec of specs) {
    const flag = flagOf(spec.key)
    const raw = values[flag.slice(2)]
    if (!spec.parse) {
      options[spec.key] = raw === true
      continue
    }
    const text = /** @type {string | undefined} */ (raw) ?? spec.default
    if (text === undefined) {
      options[spec.key] = null
      continue
    }
    try {
      options[spec.key] = spec.parse(text)
    } catch (err) {
      throw new OptionError(`${flag} ${JSON.stringify(text)}: ${/** @type {Error} */ (err).message}`)
    }
  }
  return { options, given: values }
}

/**
 * Checks between options, once they are each valid.
 * @param {Options} options
 * @param {Record<string, unknown>} given the flags actually passed
 */
function validate (options, given) {
  if (options.spawn && given.url !== undefined) throw new OptionError('--url and --spawn are exclusive: --spawn picks its own port')
  const remote = options.url.find(url => !isLoopback(url))
  if (!options.spawn && !options.allowRemote && remote) {
    throw new OptionError(`--url ${remote} is not on this machine; pass --allow-remote to load a remote server`)
  }
  if (options.trace && options.docSize > 0) throw new OptionError('--trace and --doc-size are exclusive: a trace brings its own start content')
  if (options.soakMs !== null) {
    if (given.editors === undefined) options.editors = [SOAK_EDITORS]
    if (options.editors.length !== 1) throw new OptionError('--soak holds one level: give --editors one number')
    if (options.trace) throw new OptionError('--soak and --trace are exclusive: a trace runs out, a soak must not')
    if (options.runs > 1) throw new OptionError('--soak and --runs are exclusive: a soak is one long run')
  }
}

/** @param {string} raw */
function perRoom (raw) {
  return raw === 'all' ? Infinity : integer(1, 10000)(raw)
}

/** @param {string} raw */
function workers (raw) {
  return raw === 'auto' ? 0 : integer(1, 64)(raw)
}

/** The --help text, generated from OPTION_SPECS. */
export function helpText () {
  return [
    'Usage: npm run loadtest -- [options]',
    '',
    'Capacity load test of a Tandem server: a sweep of levels of real Socket.IO editors, each with a Y.Doc',
    'making code edits and moving its cursor. Per level: connect and sync time, ACK and broadcast latency',
    '(p50/p90/p99/max from HDR histograms, warm-up excluded), errors, loss, server and generator load, and',
    'a convergence check. Then autocannon against the REST API, and a capacity verdict against the SLOs.',
    'With --soak, one level is held for a long time instead, and the server\'s memory sampled throughout.',
    `At the defaults a run edits and measures for ${formatDuration(plannedTime(defaultOptions()).ms)}, and takes a few seconds per level more:`,
    `${plannedTime(defaultOptions()).breakdown}.`,
    '',
    'Options:',
    ...optionLines(OPTION_SPECS),
    '',
    'Examples:',
    '  npm run loadtest -- --spawn single',
    '  npm run loadtest -- --editors 10,25,50 --per-room all',
    '  npm run loadtest -- --trace ../shared/traces/rustcode.json.gz --editors 10',
    '  npm run loadtest -- --spawn single --soak 30m',
    '  npm run loadtest -- --spawn single --runs 3 --editors 300,600 --rest-duration 0',
    ''
  ].join('\n')
}

/**
 * One line per option (wrapped), with its default: the body of a --help text.
 * @param {OptionSpec[]} specs
 */
export function optionLines (specs) {
  const rows = specs.map(spec => {
    const left = `  ${flagOf(spec.key)}${spec.arg ? ' ' + spec.arg : ''}`
    const words = spec.help.split(' ')
    // The default stays on one line, whole.
    if (spec.default !== undefined && spec.default !== '0') words.push(`(default ${spec.default})`)
    return { left, words }
  })
  const width = Math.max(...rows.map(row => row.left.length)) + 2
  const wrap = (/** @type {string[]} */ words) => {
    const lines = ['']
    for (const word of words) {
      if (lines[lines.length - 1].length + word.length + 1 > HELP_COLUMNS - width && lines[lines.length - 1] !== '') lines.push('')
      lines[lines.length - 1] += (lines[lines.length - 1] === '' ? '' : ' ') + word
    }
    return lines.join('\n' + ' '.repeat(width))
  }
  return rows.map(row => row.left.padEnd(width) + wrap(row.words))
}
