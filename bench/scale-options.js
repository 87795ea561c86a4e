import { optionLines, parseSpecs } from '../loadtest/options.js'
import { PLACEMENTS } from '../loadtest/spread.js'
import { duration, integer, integerList, oneOf } from '../loadtest/values.js'
import { workloadSpecs } from './workload-options.js'

// Every option of the scale-out bench (bench/scale.js) in one place: flag, default, unit and
// meaning. Parsed once, validated, frozen; `--help` is generated from this table.

const SECOND = 1000

/**
 * @typedef {object} ScaleBenchOptions
 * @property {number[]} workers process counts W, one set of configurations each, ascending. Default 2,4.
 * @property {number} editors editors connected at once. Default 300.
 * @property {number} perRoom editors per room. Default 5.
 * @property {import('../loadtest/spread.js').Placement[]} placement the Redis configurations of each W, by how editors
 *   are placed: each room on one process (`rooms`), each room spread over them (`editors`). Default rooms,editors.
 * @property {number[]} spacing REDIS_APPEND_SPACING_MS values: each W's Redis configurations once per value. Default
 *   none (the servers' own setting, once).
 * @property {boolean} shareNothing measure W embedded processes that share nothing, each room on one, for each W
 *   above 1: the reference of the W's other rows. Default true (off with --no-share-nothing).
 * @property {number} rate edits per second per editor. Default 5.
 * @property {number} payload characters per edit. Default 8.
 * @property {number} durationMs measured window per configuration. Default 15 s.
 * @property {number} warmupMs editing before the window, left out. Default 5 s.
 * @property {number} ackTimeoutMs bound on each ACK and on the wait for late broadcasts. Default 5 s.
 * @property {number} threads load-generator threads (0 = sized from the load). Default 0.
 * @property {number} runs times every configuration is measured, the configurations in turn each time; the table gives medians. Default 1.
 * @property {number} quietWaitMs longest wait, before each configuration, for the machine to be idle. Default 60 s.
 * @property {boolean} json print the results as JSON instead of a table. Default false.
 */

// The Redis rows of a W in this order: each room on one process, the closer to sharing nothing, first.
const PLACEMENT_ORDER = Object.freeze(/** @type {import('../loadtest/spread.js').Placement[]} */ (['rooms', 'editors']))

/** @type {import('../loadtest/options.js').OptionSpec[]} */
export const SCALE_OPTION_SPECS = [
  { key: 'workers', arg: 'LIST', default: '2,4', parse: workerList, help: 'Process counts W: for each, W embedded processes sharing nothing, then W processes sharing one Redis per --placement, after the embedded single process.' },
  { key: 'editors', arg: 'N', default: '300', parse: integer(2, 5000), help: 'Editors connected at once.' },
  { key: 'perRoom', arg: 'K', default: '5', parse: integer(2, 1000), help: 'Editors per room.' },
  { key: 'placement', arg: 'LIST', default: 'rooms,editors', parse: placementList, help: 'The Redis configurations of each W: `rooms`, every editor of room r on process r mod W, as a balancer that sends each document to one process would, so no update crosses between processes; `editors`, editor i of a room on process i mod W, as behind a non-sticky balancer. One configuration for W = 1.' },
  { key: 'spacing', arg: 'LIST', default: '', parse: spacingList, help: 'REDIS_APPEND_SPACING_MS values in ms: each W\'s Redis configurations run once per value, to weigh CPU against ACK and broadcast latency. Empty: the servers\' own setting.' },
  { key: 'noShareNothing', help: 'Leave out the W embedded processes that share nothing (no Redis), each room on one, which the × share-nothing columns divide by: what W processes cost on this machine whatever they share.' },
  ...workloadSpecs({ durationDefault: '15s', window: 'configuration (no cursor moves)' }),
  { key: 'threads', arg: 'N', default: 'auto', parse: raw => raw === 'auto' ? 0 : integer(1, 64)(raw), help: 'Load-generator threads; `auto` sizes them from the message rate.' },
  { key: 'runs', arg: 'N', default: '1', parse: integer(1, 20), help: 'Measure every configuration N times, taking the configurations in turn each time, and give the medians: this machine\'s speed drifts between runs.' },
  { key: 'quietWaitMs', arg: 'TIME', default: '60s', parse: duration({ max: 600 * SECOND }), help: 'Before each configuration, wait up to this long for the machine to be idle; 0 does not wait.' },
  { key: 'json', help: 'Print the results as JSON instead of a table.' },
  { key: 'help', help: 'Show this help.' }
]

/**
 * @param {string[]} argv
 * @returns {Readonly<ScaleBenchOptions & { help: boolean }>}
 */
export function parseScaleOptions (argv) {
  const { noShareNothing, ...options } = parseSpecs(SCALE_OPTION_SPECS, argv).options
  return Object.freeze({ ...options, shareNothing: !noShareNothing })
}

export function scaleHelpText () {
  return [
    'Usage: npm run bench -- scale [options]      (or: node bench/scale.js [options])',
    '',
    'Does a server process add capacity? Runs the same workload against the embedded single process',
    '(LevelDB), then for each W of --workers against W embedded processes that share nothing (each room',
    'on one), W processes sharing one Redis with each room on one, and W processes sharing one Redis with',
    'each room spread over them; each configuration started alone on free loopback ports. Prints ACK',
    'p50 and p99, broadcast p99, and the CPU of every server process and Redis per 1,000 deliveries the',
    'server counted, each against the share-nothing processes of the same W, and the Redis commands',
    'run per update stored (INFO commandstats over the measured window, per acknowledged update).',
    '',
    'Options:',
    ...optionLines(SCALE_OPTION_SPECS),
    '',
    'Examples:',
    '  npm run bench -- scale --runs 3',
    '  npm run bench -- scale --workers 1,2,4 --placement editors --no-share-nothing',
    '  npm run bench -- scale --workers 2 --spacing 0,5,20 --runs 3',
    ''
  ].join('\n')
}

/** Distinct process counts, ascending. @param {string} raw */
function workerList (raw) {
  return [...new Set(integerList(1, 64)(raw))].sort((a, b) => a - b)
}

/** Distinct spacings in ms, ascending; none when empty. @param {string} raw */
function spacingList (raw) {
  return raw.trim() === '' ? [] : [...new Set(integerList(0, 100)(raw))].sort((a, b) => a - b)
}

/** Distinct placements, in the order of the rows. @param {string} raw */
function placementList (raw) {
  const one = oneOf(PLACEMENTS)
  const given = new Set(raw.split(',').map(part => one(part.trim())))
  return [...given].sort((a, b) => PLACEMENT_ORDER.indexOf(a) - PLACEMENT_ORDER.indexOf(b))
}
