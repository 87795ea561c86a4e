import { duration, integer, number } from '../values.js'

// The workload options the benches share (bench/scale.js, peers/run.js): one table of flags, so
// both read and document them alike.

const SECOND = 1000

/**
 * @param {{ durationDefault: string, window: string }} what the measured window's default, and what it is per
 * @returns {import('../options.js').OptionSpec[]}
 */
export function workloadSpecs ({ durationDefault, window }) {
  return [
    { key: 'rate', arg: 'N', default: '5', parse: number(0.1, 100), help: 'Edits per second per editor, open loop.' },
    { key: 'payload', arg: 'CHARS', default: '8', parse: integer(1, 10000), help: 'Characters per edit.' },
    { key: 'durationMs', arg: 'TIME', default: durationDefault, parse: duration({ min: SECOND, max: 600 * SECOND }), help: `Measured window per ${window}.` },
    { key: 'warmupMs', arg: 'TIME', default: '5s', parse: duration({ max: 120 * SECOND }), help: 'Editing before each window, left out of the figures.' },
    { key: 'ackTimeoutMs', arg: 'TIME', default: '5s', parse: duration({ min: 100, max: 60 * SECOND }), help: 'Bound on each ACK, and on the wait for late broadcasts after the window.' }
  ]
}
