import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { cp, open, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { EXIT_CODES } from '../server/exit-codes.js'
import { STOPPED_FILE } from '../server/storage/level-dir.js'
import { spawnServer, startChildServer } from './helpers/child-server.js'
import { tableAfter } from './helpers/markdown.js'
import { deferrals, missing } from './helpers/processes.js'
import { startRedis } from './helpers/redis.js'
import { api, contentOf, createSession, tempDataDir } from './helpers/server.js'
import { mountSmallDisk, smallDiskUnavailable } from './helpers/small-disk.js'

// A server that cannot open its storage says so in one line (what, where, what to do) and exits
// with a code of its own; one whose storage is damaged refuses to start rather than serve less than
// it acknowledged. Every case runs `node server/index.js` on a real LevelDB directory made by a real
// server and then damaged the way disks and people damage them.

const run = promisify(execFile)

/**
 * Runs the server as users do and expects it to exit before listening: resolves with its exit
 * code, its log lines and its stderr. Killed (and failed) if it is still running after 20 s.
 * @param {Record<string, string>} env
 */
async function startRefused (env) {
  const { child, logs, output, lines } = spawnServer(env)
  const read = once(lines, 'close')
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
  const [[code]] = await Promise.all([once(child, 'exit'), read])
  clearTimeout(timer)
  assert.ok(!logs.some(entry => entry.msg === 'listening'), 'the server listened')
  return { code, logs, stderr: output.stderr, errors: logs.filter(entry => entry.level >= 50) }
}

/**
 * The one line a refused start logs: asserts there is exactly one error line, it names DATA_DIR
 * and the exit code, and nothing went to stderr (no stack trace).
 * @param {Awaited<ReturnType<typeof startRefused>>} refused
 * @param {keyof typeof EXIT_CODES} reason
 * @param {string} dataDir
 */
function assertRefused (refused, reason, dataDir) {
  assert.equal(refused.code, EXIT_CODES[reason], `exit code; logs: ${JSON.stringify(refused.logs)} stderr: ${refused.stderr}`)
  assert.equal(refused.errors.length, 1, `one error line: ${JSON.stringify(refused.errors)}`)
  const [line] = refused.errors
  assert.equal(line.reason, reason)
  assert.equal(line.exitCode, EXIT_CODES[reason])
  assert.ok(line.msg.includes(dataDir) || line.dataDir === dataDir, `names DATA_DIR: ${line.msg}`)
  assert.equal(refused.stderr, '', 'nothing on stderr')
  return line
}

/** @type {string[]} the sessions the prepared data dir holds, in the order they were made (two per run) */
const ids = []
/** @type {{ dir: string, remove: () => Promise<void> }} */
let prepared
/** @type {Map<string, string>} content of each session */
const contents = new Map()

// Two runs of a real server, each stopped cleanly after making two sessions: the second start turns
// the first run's log into a table file (.ldb); the second run's sessions stay in the log (.log).
before(async () => {
  prepared = await tempDataDir()
  for (let runIndex = 0; runIndex < 2; runIndex++) {
    const server = await startChildServer({ DATA_DIR: prepared.dir })
    try {
      for (let i = 0; i < 2; i++) {
        const content = `run ${runIndex} session ${i}\n`.repeat(20)
        const { id } = await createSession(server.url, { content })
        ids.push(id)
        contents.set(id, content)
      }
    } finally {
      assert.equal((await server.stop('SIGTERM')).code, 0)
    }
  }
})
after(() => prepared.remove())

/** A copy of the prepared data dir for one test to damage. @param {import('node:test').TestContext} t */
async function copyOfData (t) {
  const copy = await tempDataDir()
  t.after(() => copy.remove())
  await cp(prepared.dir, copy.dir, { recursive: true })
  return copy.dir
}

/** @param {string} dir @param {string} suffix */
async function fileEnding (dir, suffix) {
  const names = (await readdir(dir)).filter(name => name.endsWith(suffix))
  assert.equal(names.length, 1, `one *${suffix} in ${names}`)
  return join(dir, names[0])
}

/** @param {string} file @param {number} offset */
async function flipByte (file, offset) {
  const handle = await open(file, 'r+')
  try {
    const byte = Buffer.alloc(1)
    await handle.read(byte, 0, 1, offset)
    byte[0] ^= 0xff
    await handle.write(byte, 0, 1, offset)
  } finally {
    await handle.close()
  }
}

/** Starts a server on `dataDir` and asserts it serves every prepared session's content. */
async function assertServesAll (/** @type {import('node:test').TestContext} */ t, /** @type {string} */ dataDir) {
  const server = await startChildServer({ DATA_DIR: dataDir })
  t.after(() => server.stop('SIGKILL'))
  for (const id of ids) assert.equal(await contentOf(server.url, id), contents.get(id))
  return server
}

describe('start-up: storage that cannot be opened', () => {
  it('exits STORAGE_CORRUPT naming CURRENT when CURRENT holds garbage', async (t) => {
    const dir = await copyOfData(t)
    await writeFile(join(dir, 'CURRENT'), 'garbage\n')
    const line = assertRefused(await startRefused({ DATA_DIR: dir }), 'STORAGE_CORRUPT', dir)
    assert.equal(line.file, 'CURRENT')
  })

  it('exits STORAGE_CORRUPT when the MANIFEST is truncated', async (t) => {
    const dir = await copyOfData(t)
    await truncate(join(dir, (await readFile(join(dir, 'CURRENT'), 'utf8')).trim()), 20)
    const line = assertRefused(await startRefused({ DATA_DIR: dir }), 'STORAGE_CORRUPT', dir)
    assert.match(line.cause, /Corruption/)
  })

  it('exits STORAGE_CORRUPT naming the table file that was deleted', async (t) => {
    const dir = await copyOfData(t)
    const table = await fileEnding(dir, '.ldb')
    await rm(table)
    const line = assertRefused(await startRefused({ DATA_DIR: dir }), 'STORAGE_CORRUPT', dir)
    assert.ok(line.msg.includes(table), line.msg)
  })

  it('exits DATA_DIR_UNUSABLE when DATA_DIR is a file', async (t) => {
    const dir = await copyOfData(t)
    const file = join(dir, 'a-file')
    await writeFile(file, 'not a directory')
    const line = assertRefused(await startRefused({ DATA_DIR: file }), 'DATA_DIR_UNUSABLE', file)
    assert.match(line.msg, /not a directory/)
  })

  it('exits STORAGE_LOCKED while another server runs on the same DATA_DIR, which keeps serving', async (t) => {
    const dir = await copyOfData(t)
    const running = await assertServesAll(t, dir)
    const line = assertRefused(await startRefused({ DATA_DIR: dir }), 'STORAGE_LOCKED', dir)
    assert.match(line.msg, /locked by another process/)
    assert.equal((await api(running.url, '/api/health')).status, 200)
  })

  it('exits REDIS_UNSUPPORTED when REDIS_WAITAOF=true meets a Redis older than 7.2', { skip: missing('redis-server') }, async (t) => {
    const defer = deferrals(t)
    const redis = await startRedis()
    defer(() => redis.remove())
    const { version } = /v=(?<version>\d+\.\d+)/.exec((await run('redis-server', ['--version'])).stdout)?.groups ?? {}
    if (Number(version) >= 7.2) return t.skip(`this redis-server is ${version}, which has WAITAOF`)
    const refused = await startRefused({ REDIS_URL: redis.url, REDIS_WAITAOF: 'true' })
    assert.equal(refused.code, EXIT_CODES.REDIS_UNSUPPORTED, JSON.stringify(refused.logs))
    assert.equal(refused.errors.length, 1)
    assert.equal(refused.errors[0].redis, `127.0.0.1:${redis.port}`)
    assert.match(refused.errors[0].msg, /Redis 7\.2/)
    assert.equal(refused.stderr, '')
  })
})

describe('start-up: a full or read-only disk', { skip: await smallDiskUnavailable() }, () => {
  it('exits STORAGE_FULL when restarted on a disk that is still full, and starts once space is back', async (t) => {
    const defer = deferrals(t)
    const disk = await mountSmallDisk(4)
    defer(() => disk.remove())
    const dir = join(disk.dir, 'data')
    await cp(prepared.dir, dir, { recursive: true })
    await disk.fill()
    const line = assertRefused(await startRefused({ DATA_DIR: dir }), 'STORAGE_FULL', dir)
    assert.match(line.cause, /No space left on device/)
    await disk.free()
    await assertServesAll(t, dir)
  })

  it('exits DATA_DIR_UNUSABLE when DATA_DIR is on a read-only filesystem', async (t) => {
    const defer = deferrals(t)
    const disk = await mountSmallDisk(4)
    defer(() => disk.remove())
    const dir = join(disk.dir, 'data')
    await cp(prepared.dir, dir, { recursive: true })
    await run('mount', ['-o', 'remount,ro', disk.dir])
    const line = assertRefused(await startRefused({ DATA_DIR: dir }), 'DATA_DIR_UNUSABLE', dir)
    assert.match(line.cause, /EROFS|read-only/i)
  })
})

describe('start-up: damaged storage is never served as if whole', () => {
  it('refuses to start without CURRENT, creates nothing over the old files, and serves everything once CURRENT is written back', async (t) => {
    const dir = await copyOfData(t)
    const current = await readFile(join(dir, 'CURRENT'), 'utf8')
    await rm(join(dir, 'CURRENT'))
    const before = (await readdir(dir)).sort()
    const line = assertRefused(await startRefused({ DATA_DIR: dir }), 'STORAGE_CORRUPT', dir)
    assert.match(line.msg, /CURRENT is missing.*MANIFEST/)
    assert.deepEqual((await readdir(dir)).sort(), before, 'no file was created or removed')
    // The repair the line gives: the newest manifest's name into CURRENT.
    const manifest = (await readdir(dir)).filter(name => name.startsWith('MANIFEST-')).sort().at(-1)
    assert.equal(`${manifest}\n`, current)
    await writeFile(join(dir, 'CURRENT'), `${manifest}\n`)
    await assertServesAll(t, dir)
  })

  it('refuses to start, every time, when a byte of the write-ahead log is flipped, naming the file and what would be dropped', async (t) => {
    const dir = await copyOfData(t)
    const log = await fileEnding(dir, '.log')
    const { size } = await stat(log)
    await flipByte(log, Math.floor(size / 2))
    for (let attempt = 0; attempt < 2; attempt++) {
      const line = assertRefused(await startRefused({ DATA_DIR: dir }), 'STORAGE_CORRUPT', dir)
      assert.equal(line.file, log.split('/').at(-1))
      assert.match(line.msg, /checksum mismatch/)
      assert.ok(line.droppedBytes > 0)
      assert.ok(line.msg.includes(`truncate -s ${line.offset} ${log}`), line.msg)
    }
    assert.equal((await stat(log)).size, size, 'the log is left as it was')
  })

  it('refuses to start when the log of a cleanly stopped server was truncated mid-record', async (t) => {
    const dir = await copyOfData(t)
    const log = await fileEnding(dir, '.log')
    await truncate(log, (await stat(log)).size - 10)
    const line = assertRefused(await startRefused({ DATA_DIR: dir }), 'STORAGE_CORRUPT', dir)
    assert.match(line.msg, /incomplete record.*stopped cleanly/)
    assert.ok(line.msg.includes(join(dir, STOPPED_FILE)))
  })

  it('starts after a crash whose last write was cut short, and logs the bytes it drops', async (t) => {
    const dir = await copyOfData(t)
    const server = await startChildServer({ DATA_DIR: dir })
    const { id } = await createSession(server.url, { content: 'written just before the crash\n' })
    await server.stop('SIGKILL')
    const log = await fileEnding(dir, '.log')
    await truncate(log, (await stat(log)).size - 10)
    const restarted = await assertServesAll(t, dir)
    const warning = restarted.logs.find(entry => /incomplete record/.test(entry.msg))
    assert.ok(warning, 'the dropped record is logged')
    assert.equal(warning.file, log.split('/').at(-1))
    assert.ok(warning.droppedBytes > 0)
    assert.equal(warning.droppedRecords, 1)
    assert.match(warning.msg, /possibly acknowledged/)
    assert.equal((await api(restarted.url, `/api/sessions/${id}/content`)).status, 404)
  })

  it('answers 503, never other content, for documents a damaged table file holds, and logs the document and the file', async (t) => {
    const dir = await copyOfData(t)
    const table = await fileEnding(dir, '.ldb')
    // The first byte of the first block: its compressed length, which LevelDB notices on a read.
    await flipByte(table, 0)
    const server = await startChildServer({ DATA_DIR: dir })
    t.after(() => server.stop('SIGKILL'))
    // Which documents a read of the damaged block touches depends on LevelDB's key ranges: the
    // first run's sessions are in it; any document answers either its exact content or 503.
    const statuses = []
    for (const id of ids) {
      const res = await api(server.url, `/api/sessions/${id}/content`)
      statuses.push(res.status)
      if (res.status === 200) assert.equal(res.body, contents.get(id))
      else assert.equal(res.status, 503, JSON.stringify(res.body))
    }
    assert.deepEqual(statuses.slice(0, 2), [503, 503])
    const line = server.logs.find(entry => entry.level >= 40 && JSON.stringify(entry).includes(ids[0]))
    assert.ok(line, `a line names the document: ${JSON.stringify(server.logs.filter(entry => entry.level >= 40))}`)
    assert.equal(line.err?.code, 'LEVEL_CORRUPTION', JSON.stringify(line))
    assertNamesTable(server.logs, table)
  })

  it('names a damaged table file at start even where LevelDB would read the damage as a missing key', async (t) => {
    const dir = await copyOfData(t)
    const table = await fileEnding(dir, '.ldb')
    // Inside a key of the first block: LevelDB, which reads without checking block checksums,
    // finds no such key and says nothing.
    const at = (await readFile(table)).indexOf(Buffer.from(ids[0]))
    assert.ok(at >= 0, 'the key is stored as it is (a Snappy literal)')
    await flipByte(table, at + 3)
    const server = await startChildServer({ DATA_DIR: dir })
    t.after(() => server.stop('SIGKILL'))
    assertNamesTable(server.logs, table)
  })
})

/** Asserts one error line names the damaged table file and a damaged block. @param {any[]} logs @param {string} table */
function assertNamesTable (logs, table) {
  const line = logs.find(entry => entry.level >= 50 && entry.file === table)
  assert.ok(line, `a line names ${table}: ${JSON.stringify(logs.filter(entry => entry.level >= 40))}`)
  assert.match(line.msg, /table file is damaged/)
  assert.equal(line.damage[0].problem, 'checksum mismatch')
}

describe('exit codes in docs/CONFIGURATION.md', () => {
  it('lists every exit code the server uses, and no other', async () => {
    const configuration = await readFile(new URL('../docs/CONFIGURATION.md', import.meta.url), 'utf8')
    assert.match(configuration, /\n## Exit codes\n/)
    const rows = tableAfter(configuration, '\n## Exit codes\n')
    assert.deepEqual(
      Object.fromEntries(rows.map(([code, reason]) => [reason.replaceAll('`', ''), Number(code)])),
      { ...EXIT_CODES }
    )
  })
})
