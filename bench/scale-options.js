import { optionLines, parseSpecs } from '../loadtest/options.js'
import { PLACEMENTS } from '../loadtest/spread.js'
import { duration, integer, integerList, oneOf } from '../loadtest/values.js'
import { workloadSpecs } from './workload-options.js'

// Every option of the scale-out bench (bench/scale.js) in one place: flag, default, unit and
// meaning. Parsed once, validated, frozen; `--help` is generated from this table.

const SECOND = 1000

/**
 * @typedef {object} ScaleBenchOptions
 * @property {number[]} workers server processes sharing one Redis, one configuration each, ascending. Default 1,2,4.
 * @property {number} editors editors connected at once. Default 300.
 * @property {number} perRoom editors per room. Default 5.
 * @property {import('../loadtest/spread.js').Placement} placement editors of a room over the processes (`editors`) or each room on one (`rooms`). Default editors.
 * @property {boolean} separate also measure W embedded processes that share nothing, each room on one. Default false.
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

/** @type {import('../loadtest/options.js').OptionSpec[]} */
export const SCALE_OPTION_SPECS = [
  { key: 'workers', arg: 'LIST', default: '1,2,4', parse: workerList, help: 'Server processes sharing one Redis: one configuration per number, after the embedded single process.' },
  { key: 'editors', arg: 'N', default: '300', parse: integer(2, 5000), help: 'Editors connected at once.' },
  { key: 'perRoom', arg: 'K', default: '5', parse: integer(2, 1000), help: 'Editors per room.' },
  { key: 'placement', arg: 'HOW', default: 'editors', parse: oneOf(PLACEMENTS), help: '`editors`: editor i of a room connects to process i mod the number of processes, as behind a non-sticky balancer; `rooms`: every editor of room r to process r mod that number, so no update crosses between processes.' },
  { key: 'separate', help: 'Also measure, for each number of --workers above 1, that many embedded processes that share nothing (no Redis), each room on one of them: what the processes cost on this machine whatever they share.' },
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
  return Object.freeze(parseSpecs(SCALE_OPTION_SPECS, argv).options)
}

export function scaleHelpText () {
  return [
    'Usage: npm run bench -- scale [options]      (or: node bench/scale.js [options])',
    '',
    'Does a server process add capacity? Runs the same workload against the embedded single process',
    '(LevelDB), then against 1, 2, 4… processes sharing one Redis (each room\'s editors spread over the',
    'processes), each started alone on free loopback ports, and prints ACK and broadcast p99 and the CPU',
    'of every server process and Redis per 1,000 deliveries the server counted, against the embedded one.',
    'With --separate, also W embedded processes that share nothing: what W processes cost on this',
    'machine, whatever they send each other.',
    '',
    'Options:',
    ...optionLines(SCALE_OPTION_SPECS),
    '',
    'Example:',
    '  npm run bench -- scale --workers 1,2,4 --editors 300',
    '  npm run bench -- scale --separate --placement rooms --runs 3',
    ''
  ].join('\n')
}

/** Distinct process counts, ascending. @param {string} raw */
function workerList (raw) {
  return [...new Set(integerList(1, 64)(raw))].sort((a, b) => a - b)
}
