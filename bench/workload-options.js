import { defaultOptions } from '../loadtest/options.js'
import { duration, integer, number } from '../loadtest/values.js'

// The workload options the benches share (bench/scale.js, bench/peers/run.js): one table of flags, so
// both read and document them alike, and the load test's options for a level of that workload.

const SECOND = 1000

/**
 * @param {{ durationDefault: string, window: string }} what the measured window's default, and what it is per
 * @returns {import('../loadtest/options.js').OptionSpec[]}
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

/**
 * The load test's options for one level of a bench: the workload as the bench's own table validated
 * it, no cursors, no REST, no trace.
 * @param {{ rate: number, payload: number, durationMs: number, warmupMs: number, ackTimeoutMs: number }} workload
 * @param {{ editors: number, perRoom: number, workers: number }} level perRoom Infinity for one document, workers 0 for auto
 * @returns {Readonly<import('../loadtest/options.js').Options>}
 */
export function levelOptions ({ rate, payload, durationMs, warmupMs, ackTimeoutMs }, { editors, perRoom, workers }) {
  return Object.freeze({
    ...defaultOptions(),
    editors: [editors],
    perRoom,
    rate,
    payload,
    durationMs,
    warmupMs,
    ackTimeoutMs,
    workers,
    awarenessRate: 0,
    restDurationMs: 0
  })
}
