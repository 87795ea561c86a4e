import { workloadSpecs } from '../workload-options.js'
import { OptionError, optionLines, parseSpecs } from '../../loadtest/options.js'
import { duration, integer, nonEmpty, oneOf } from '../../loadtest/values.js'
import { TANDEM_CLIENTS } from '../../loadtest/target.js'
import { pinUnavailable } from './pin.js'
import { PEERS } from './start.js'

// Every option of the comparison with peer systems (run.js) in one place: flag, default, unit and
// meaning. Parsed once, validated, frozen; `--help` is generated from this table.

const SECOND = 1000

/** Tandem and its peers, Tandem first: the ratios read against it. */
export const SYSTEM_NAMES = Object.freeze(['tandem', ...Object.keys(PEERS)])

/**
 * @typedef {object} PeerBenchOptions
 * @property {string[]} systems systems to compare, Tandem first when included. Default all five.
 * @property {number[]} oneDoc loads with every editor in one document, in editors. Default 50,100,150,200.
 * @property {number[]} rooms loads in rooms of `perRoom` editors, in editors. Default 300,600.
 * @property {number} perRoom editors per room of the `rooms` loads. Default 5.
 * @property {number} rate edits per second per editor. Default 5.
 * @property {number} payload characters per edit. Default 8.
 * @property {number} durationMs measured window per system and load. Default 20 s.
 * @property {number} warmupMs editing before the window, left out. Default 5 s.
 * @property {number} ackTimeoutMs bound on each ACK and on the wait for late broadcasts. Default 5 s.
 * @property {number} runs times each load is measured against every system, the order alternating. Default 1.
 * @property {number} workers load-generator threads (0 = sized from the load). Default 0.
 * @property {boolean} apply editors apply every remote update and convergence is checked. Default false.
 * @property {number} quietWaitMs longest wait, before each run, for the machine to be idle. Default 60 s.
 * @property {boolean} pin the server on CPU 0 alone, the generator on the other CPUs. Default false.
 * @property {import('../../loadtest/target.js').TandemClient} tandemClient what Tandem's editors speak through. Default wire.
 * @property {string} out directory for peers-<timestamp>/peers.md and peers.json. Default loadtest/reports.
 * @property {boolean} json print the results as JSON instead of tables. Default false.
 */

/** @type {import('../../loadtest/options.js').OptionSpec[]} */
export const PEER_OPTION_SPECS = [
  { key: 'systems', arg: 'LIST', default: SYSTEM_NAMES.join(','), parse: systems, help: 'Systems to compare, comma-separated.' },
  { key: 'oneDoc', arg: 'LIST', default: '50,100,150,200', parse: loads, help: 'Loads with every editor in ONE document, in editors; `none` skips them.' },
  { key: 'rooms', arg: 'LIST', default: '300,600', parse: loads, help: 'Loads in rooms of --per-room editors, in editors; `none` skips them.' },
  { key: 'perRoom', arg: 'K', default: '5', parse: integer(2, 1000), help: 'Editors per room of the --rooms loads.' },
  ...workloadSpecs({ durationDefault: '20s', window: 'system and load' }),
  { key: 'runs', arg: 'N', default: '1', parse: integer(1, 20), help: 'Measure each load N times against every system, in the listed order in odd runs and the reverse in even ones (a machine that drifts over the minutes then favours no system), and add the medians over the runs and the median of the runs\' ratios Tandem/peer.' },
  { key: 'workers', arg: 'N', default: 'auto', parse: raw => raw === 'auto' ? 0 : integer(1, 64)(raw), help: 'Load-generator threads; `auto` sizes them from the message rate.' },
  { key: 'apply', help: 'Editors apply every update they receive, as real editors do, and rooms are checked for convergence. Off by default: that costs the generator about 35 µs per delivery at 100 editors in one document, for every system alike, CPU taken from the servers under test.' },
  { key: 'quietWaitMs', arg: 'TIME', default: '60s', parse: duration({ max: 600 * SECOND }), help: 'Before each run, wait up to this long for the machine to be idle (other processes under a quarter of a core over a second); 0 does not wait.' },
  { key: 'pin', help: 'Run each server on CPU 0 alone and the load generator on the other CPUs (taskset; Linux, 2 CPUs or more), so neither takes the other\'s core.' },
  { key: 'tandemClient', arg: 'CLIENT', default: 'wire', parse: oneOf(/** @type {import('../../loadtest/target.js').TandemClient[]} */ (Object.keys(TANDEM_CLIENTS))), help: 'What Tandem\'s editors speak through: `wire`, its protocol over a bare WebSocket, as every peer\'s client here speaks its own; `socket.io`, the shipped client\'s socket.io-client socket, which costs the generator more per message.' },
  { key: 'out', arg: 'DIR', default: 'loadtest/reports', parse: nonEmpty, help: 'Where to write peers-<timestamp>/peers.md and peers.json.' },
  { key: 'json', help: 'Print the results as JSON instead of tables.' },
  { key: 'help', help: 'Show this help.' }
]

/**
 * @param {string[]} argv
 * @returns {Readonly<PeerBenchOptions & { help: boolean }>}
 */
export function parsePeerOptions (argv) {
  const { options } = parseSpecs(PEER_OPTION_SPECS, argv)
  if (options.oneDoc.length + options.rooms.length === 0) throw new OptionError('--one-doc and --rooms are both `none`: nothing to run')
  const cannotPin = options.pin ? pinUnavailable() : null
  if (cannotPin) throw new OptionError(`--pin ${cannotPin}`)
  return Object.freeze(options)
}

export function peerHelpText () {
  return [
    'Usage: npm run peers -- [options]      (or: node bench/peers/cli.js [options])',
    '',
    'Runs the same editor workload against Tandem and its peers, one system at a time on this machine:',
    'each system is started on a free loopback port, loaded through a warm-up and a measured window,',
    'and stopped. Prints ACK and broadcast latency, deliveries/s, loss, server CPU and RSS per system',
    'and load, then the ratios Tandem/peer.',
    '',
    'Options:',
    ...optionLines(PEER_OPTION_SPECS),
    '',
    'Example:',
    '  npm run peers -- --systems tandem,ws-relay --one-doc 50 --rooms none --duration 10s',
    ''
  ].join('\n')
}

/** @param {string} raw */
function systems (raw) {
  const names = raw.split(',').map(name => name.trim())
  for (const name of names) if (!SYSTEM_NAMES.includes(name)) throw new Error(`unknown system ${JSON.stringify(name)}: expected some of ${SYSTEM_NAMES.join(', ')}`)
  if (new Set(names).size !== names.length) throw new Error('a system is listed twice')
  // Tandem first: the ratios read against it.
  return [...names].sort((a, b) => Number(b === 'tandem') - Number(a === 'tandem'))
}

/** @param {string} raw */
function loads (raw) {
  if (raw.trim() === 'none') return []
  const one = integer(2, 5000)
  return raw.split(',').map(part => one(part))
}
