import { optionLines, parseSpecs } from '../loadtest/options.js'
import { duration, integer } from '../loadtest/values.js'

// Every option of the Redis footprint bench (bench/redis-footprint.js) in one place: flag, default,
// unit and meaning. Parsed once, validated, frozen; `--help` is generated from this table.

/**
 * @typedef {object} FootprintOptions
 * @property {number} documents sessions created, one editor typing in each. Default 200.
 * @property {number} chars characters each editor types. Default 2000.
 * @property {number} updateChars characters per update (a keystroke is 1). Default 1.
 * @property {number} idleMs the server's DOC_IDLE_MS: how long after its editor left a document unloads (and compacts). Default 500 ms.
 * @property {boolean} json print the report as JSON instead of tables. Default false.
 */

/** @type {import('../loadtest/options.js').OptionSpec[]} */
export const FOOTPRINT_OPTION_SPECS = [
  { key: 'documents', arg: 'N', default: '200', parse: integer(1, 100000), help: 'Sessions created through the REST API, each with one editor that types, leaves, and lets its document unload.' },
  { key: 'chars', arg: 'N', default: '2000', parse: integer(1, 1000000), help: 'Characters of code each editor types.' },
  { key: 'updateChars', arg: 'N', default: '1', parse: integer(1, 10000), help: 'Characters per update: 1 is a keystroke each.' },
  { key: 'idleMs', arg: 'TIME', default: '500ms', parse: duration({ min: 0, max: 60000 }), help: 'The server\'s DOC_IDLE_MS: how long a document without editors stays loaded before it is compacted and unloaded.' },
  { key: 'json', help: 'Print the report as JSON instead of tables.' },
  { key: 'help', help: 'Show this help.' }
]

/** @param {string[]} argv @returns {Readonly<FootprintOptions & { help: boolean }>} */
export function parseFootprintOptions (argv) {
  return Object.freeze(parseSpecs(FOOTPRINT_OPTION_SPECS, argv).options)
}

export function footprintHelpText () {
  return [
    'Usage: npm run bench -- footprint [options]      (or: node bench/redis-footprint.js [options])',
    '',
    'What an idle document, and a deleted one, leave in Redis. Starts a redis-server of its own (AOF,',
    'fsync every second) and a Tandem server on it in this process, auth on; creates sessions through',
    'the REST API, has one editor (socket.io-client, on a worker thread) type code into each and leave,',
    'waits until every document has unloaded (compacted), and reads every key: MEMORY USAGE by kind of',
    'key, TTLs, entries left in each log, the snapshot\'s own bytes and its hash\'s fields, INFO memory.',
    'Then deletes every session through the REST API and reads them again. Figures per document are',
    'over a baseline read after one warm-up document went through the same cycle.',
    '',
    'Options:',
    ...optionLines(FOOTPRINT_OPTION_SPECS),
    '',
    'Examples:',
    '  npm run bench -- footprint',
    '  npm run bench -- footprint --documents 50 --chars 10000 --json',
    ''
  ].join('\n')
}
