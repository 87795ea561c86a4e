import { TandemApi } from './api.js'
import { loadTrace } from './edits/trace.js'
import { runLevel } from './level.js'
import { describeMachine } from './machine.js'
import { roomSizesOf } from './plan.js'
import { plannedTime } from './planned-time.js'
import { formatDuration } from './report/format.js'
import { runRest } from './rest.js'
import { describeServer } from './server-info.js'
import { runSoak } from './soak.js'
import { spawnServer } from './spawn.js'
import { describeSpread } from './spread.js'
import { tandemTarget } from './target.js'
import { sloFailures, verdict } from './verdict.js'

// The whole run: start (or reach) the server, run each level of the sweep in turn, then the REST
// section, and assemble the report with its verdict. The server is stopped however the run ends.

export const TRACE_CREDIT = 'Editing-trace format and the shared code-editing traces: Joseph Gentle\'s editing-traces collection ' +
  '(https://github.com/josephg/editing-traces), licensed CC BY 4.0 (https://creativecommons.org/licenses/by/4.0/). ' +
  'Credit the trace\'s author wherever these results are published.'

/** @typedef {import('./level-result.js').LevelResult & { slo: { pass: boolean, failures: string[] } }} JudgedLevel */

/**
 * @typedef {object} RunHooks
 * @property {(progress: import('./level.js').Progress) => void} onProgress
 * @property {(level: JudgedLevel) => void} onLevel
 * @property {(text: string) => void} onNote
 */

/**
 * @param {Readonly<import('./options.js').Options>} options
 * @param {RunHooks} hooks
 * @param {string[]} argv the command line, recorded in the report
 */
export async function runLoadTest (options, hooks, argv) {
  const startedAt = new Date().toISOString()
  const machine = describeMachine()
  const trace = options.trace ? await loadTrace(options.trace) : null
  // A server spawned here keeps history, so the REST section's `content?at=` has one to read; a day
  // outlasts any run.
  const spawned = options.spawn ? await spawnServer(options.spawn, { ...options, historyRetention: '1d' }) : null
  const urls = spawned?.urls ?? options.url
  const slo = { ackP99Ms: options.sloAckP99Ms, broadcastP99Ms: options.sloBroadcastP99Ms }
  try {
    // REST and /metrics go to the first process: with several sharing one Redis, its /metrics
    // gathers every process's series (server/realtime/cluster.js).
    const api = new TandemApi(urls[0], options.apiKey, options.metricsToken)
    // A server with auth on admits each session's editors with a token for it: with the API key at
    // hand one is minted per room (an explicit --token is used as given instead).
    const health = await api.health()
    const authOn = health.auth === 'on'
    const server = describeServer(health, await api.metrics(), spawned)
    const planned = plannedTime(options)
    hooks.onNote(`${formatDuration(planned.ms)} of editing and measuring, and a few seconds per level more: ${planned.breakdown}`)
    const target = tandemTarget(api, { mintTokens: authOn && options.apiKey !== null && options.token === null, urls, client: options.client })
    /** @type {JudgedLevel[]} */
    const levels = []
    /** @type {import('./soak.js').SoakResult | null} */
    let soak = null
    /** @param {import('./level-result.js').LevelResult} result */
    const addLevel = (result) => {
      const failures = sloFailures(result, slo)
      const level = { ...result, slo: { pass: failures.length === 0, failures } }
      levels.push(level)
      hooks.onLevel(level)
    }
    if (options.soakMs !== null) {
      const result = await runSoak({ options, target, onProgress: hooks.onProgress, serverProcesses: spawned?.pids ?? [] })
      soak = result.soak
      for (const level of result.levels) addLevel(level)
    } else {
      for (const editors of options.editors) {
        addLevel(await runLevel({ options, target, trace, onProgress: hooks.onProgress, serverProcesses: spawned?.pids ?? [] }, editors))
      }
    }
    let rest = null
    // A soak is about memory over time; the REST section would only add minutes to it.
    if (options.restDurationMs > 0 && soak === null) {
      hooks.onNote(`REST: autocannon, ${options.restDurationMs / 1000} s per endpoint`)
      rest = await runRest(api, { durationMs: options.restDurationMs })
    }
    return {
      tool: 'tandem-loadtest',
      startedAt,
      finishedAt: new Date().toISOString(),
      machine,
      target: {
        url: urls[0],
        mode: options.spawn ?? 'external',
        description: spawned?.description ?? (urls.length > 1 ? `${urls.length} server processes at --url` : 'server at --url'),
        urls,
        // What /proc was read for: the CPU of the server is the sum over these.
        processes: spawned?.pids ?? [],
        spread: urls.length > 1 ? describeSpread(options.editors.flatMap(editors => roomSizesOf(editors, options.perRoom)), urls.length) : null
      },
      server,
      settings: settingsOf(options, argv),
      trace: trace && options.trace
        ? {
            file: options.trace,
            transactions: trace.txns.length,
            patches: trace.txns.reduce((total, txn) => total + txn.patches.length, 0),
            endLength: trace.endContent.length,
            credit: TRACE_CREDIT
          }
        : null,
      levels,
      soak,
      rest,
      verdict: verdict(levels, slo)
    }
  } finally {
    await spawned?.stop()
  }
}

/** @typedef {Awaited<ReturnType<typeof runLoadTest>>} Report */

/**
 * The settings as the report shows them: units in seconds, no secrets.
 * @param {Readonly<import('./options.js').Options>} options
 * @param {string[]} argv
 */
export function settingsOf (options, argv) {
  return {
    editors: options.editors,
    perRoom: /** @type {number | 'all'} */ (options.perRoom === Infinity ? 'all' : options.perRoom),
    rate: options.rate,
    // A soak's one level is measured for the whole soak.
    durationSeconds: (options.soakMs ?? options.durationMs) / 1000,
    warmupSeconds: options.warmupMs / 1000,
    payload: options.payload,
    ackTimeoutSeconds: options.ackTimeoutMs / 1000,
    awarenessRate: options.awarenessRate,
    apply: options.apply,
    trace: options.trace,
    docSize: options.docSize,
    joinStorm: options.joinStorm,
    soakSeconds: options.soakMs === null ? null : options.soakMs / 1000,
    workers: /** @type {number | 'auto'} */ (options.workers === 0 ? 'auto' : options.workers),
    client: options.client,
    restDurationSeconds: options.restDurationMs / 1000,
    auth: { apiKey: options.apiKey !== null, token: options.token !== null },
    command: ['npm run loadtest --', ...redact(argv).map(arg => /[^\w@%+=:,./-]/.test(arg) ? `'${arg}'` : arg)].join(' ')
  }
}

/** The command line without the values of --api-key, --token and --metrics-token. @param {string[]} argv */
function redact (argv) {
  const secret = /^--(api-key|token|metrics-token)(=|$)/
  return argv.map((arg, i) => {
    if (secret.test(arg) && arg.includes('=')) return arg.replace(/=.*/, '=***')
    return i > 0 && secret.test(argv[i - 1]) && !argv[i - 1].includes('=') ? '***' : arg
  })
}
