// `npm run bench -- footprint [options]` (or `node bench/redis-footprint.js`): what an idle document,
// and a deleted one, leave in Redis. A redis-server of its own (bench/redis-process.js) and a real
// Tandem server on it in this process, with auth on as production runs it; sessions created and
// deleted through the REST API, typed into by real socket.io-client editors on a worker thread
// (bench/footprint-typists.js), unloaded by the server's own idle timer, which compacts them. What
// is left is read from Redis itself, key by key (bench/redis-keys.js); the figures and tables are
// bench/footprint-report.js's.
import { Redis } from 'ioredis'
import { createServer } from '../server/app.js'
import { loadConfig } from '../server/config.js'
import { TandemApi, mapLimit } from '../loadtest/api.js'
import { now, sleepUntil } from '../loadtest/clock.js'
import { codeAt } from '../loadtest/edits/code-sample.js'
import { optionsOrHelp } from '../loadtest/options.js'
import { footprintHelpText, parseFootprintOptions } from './footprint-options.js'
import { contentsOf, renderFootprint, stageOf } from './footprint-report.js'
import { typeInWorker } from './footprint-typists.js'
import { startRedisServer } from './redis-process.js'
import { readDocuments, readKeys, readMemory } from './redis-keys.js'

const REST_AT_ONCE = 16
// Longest wait for every document to unload, beyond DOC_IDLE_MS.
const UNLOAD_TIMEOUT_MS = 60000
const POLL_MS = 50

// Secrets of this run's server only; it listens on loopback and is gone at the end.
const AUTH_SECRET = 'footprint-bench-secret-'.padEnd(40, 'x')
const API_KEY = 'footprint-bench-api-key'

/**
 * @param {Readonly<Omit<import('./footprint-options.js').FootprintOptions, 'json'>>} options
 * @param {{ onNote?: (text: string) => void }} [hooks]
 */
export async function runFootprint (options, { onNote = () => {} } = {}) {
  const redisServer = await startRedisServer()
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 })
  redis.on('error', () => {})
  /** @type {import('../server/app.js').TandemServer | undefined} */
  let server
  try {
    server = await createServer(loadConfig({}, {
      redisUrl: redisServer.url,
      logLevel: 'silent',
      docIdleMs: options.idleMs,
      authSecret: AUTH_SECRET,
      apiKey: API_KEY,
      host: '127.0.0.1',
      // Every editor connects from 127.0.0.1 and types faster than a person: per-IP and
      // per-connection rates would only slow the run down, and they write no key of a document.
      restPerMinute: 0,
      connectionsPerMinute: 0,
      maxConnectionsPerIp: 0,
      joinsPerMinute: 0,
      updatesPerSecond: 0,
      bytesPerSecond: 0
    }))
    const { url } = await server.listen(0, '127.0.0.1')
    const api = new TandemApi(url, API_KEY)
    const redisVersion = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? 'unknown'
    /** @param {number[]} numbers @returns {Promise<import('./footprint-typists.js').Job[]>} */
    const sessions = numbers => mapLimit(numbers, REST_AT_ONCE, async (i) => {
      const { id } = await api.createSession({ name: `footprint-${i}.js` })
      const { token } = await api.mintToken(id, { user: `typist-${i}`, role: 'editor' })
      return { doc: id, token, text: codeAt(i * 97, options.chars) }
    })
    // Redis allocates some memory once, at the first call of each command (a latency histogram of
    // about 30 KB per command: 'latency-tracking', on by default) and script: a warm-up document
    // goes through the whole cycle first, read as the stages are, so that used_memory after it grows
    // by what the documents cost. Its tombstone stays in the baseline.
    onNote('warming up with one document')
    const warmUp = await sessions([options.documents])
    await typeInWorker(url, warmUp, options.updateChars)
    await unloaded(server, options.idleMs + UNLOAD_TIMEOUT_MS)
    await readDocuments(redis, (await read(redis)).keys)
    await api.deleteSession(warmUp[0].doc)
    const baseline = await read(redis)

    onNote(`typing into ${options.documents} documents`)
    const jobs = await sessions(Array.from({ length: options.documents }, (_, i) => i))
    const started = now()
    await typeInWorker(url, jobs, options.updateChars)
    const typingMs = now() - started

    onNote('waiting for every document to unload')
    const left = now()
    await unloaded(server, options.idleMs + UNLOAD_TIMEOUT_MS)
    const unloadMs = now() - left
    const idleReading = await read(redis)
    const documents = await readDocuments(redis, idleReading.keys)

    onNote(`deleting ${jobs.length} sessions`)
    await mapLimit(jobs, REST_AT_ONCE, ({ doc }) => api.deleteSession(doc))
    const deletedReading = await read(redis)

    return {
      settings: { documents: options.documents, chars: options.chars, updateChars: options.updateChars, idleMs: options.idleMs },
      redisVersion,
      typingMs,
      unloadMs,
      baseline: { ...baseline.memory, keys: baseline.keys },
      idle: stageOf(idleReading, baseline, options.documents),
      contents: contentsOf(documents),
      deleted: stageOf(deletedReading, baseline, options.documents),
      /** every key left after the deletions, with its bytes and TTL */
      deletedKeys: deletedReading.keys
    }
  } finally {
    await server?.close()
    redis.disconnect()
    await redisServer.stop()
  }
}

/** Every key, then INFO memory and DBSIZE; read while the server writes nothing. @param {Redis} redis */
async function read (redis) {
  const keys = await readKeys(redis)
  return { keys, memory: await readMemory(redis) }
}

/**
 * Resolves once the server holds no document and every unload (with its compaction) has ended.
 * @param {import('../server/app.js').TandemServer} server @param {number} timeoutMs
 */
async function unloaded (server, timeoutMs) {
  const deadline = now() + timeoutMs
  while (server.registry.size > 0) {
    if (now() > deadline) throw new Error(`${server.registry.size} documents still loaded after ${timeoutMs / 1000} s`)
    await sleepUntil(now() + POLL_MS)
  }
  // With no document loaded, this only awaits the unloads still compacting.
  await server.registry.closeAll()
}

/** The command line: parse, run with notes on stderr, print the tables (or JSON) on stdout. @param {string[]} argv */
export async function main (argv) {
  const options = optionsOrHelp('bench footprint', argv, { parse: parseFootprintOptions, helpText: footprintHelpText })
  if (!options) return
  const report = await runFootprint(options, { onNote: text => process.stderr.write(`bench footprint: ${text}\n`) })
  process.stdout.write(options.json ? JSON.stringify(report, null, 2) + '\n' : renderFootprint(report))
}

if (import.meta.url === `file://${process.argv[1]}`) await main(process.argv.slice(2))
