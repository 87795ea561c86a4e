import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, it } from 'node:test'
import { OPTION_SPECS, OptionError, defaultOptions, helpText, parseOptions } from '../loadtest/options.js'

const CLI = new URL('../loadtest/cli.js', import.meta.url).pathname
const run = promisify(execFile)

describe('load test options', () => {
  it('defaults to the standard sweep against localhost:3000', () => {
    const options = defaultOptions()
    assert.deepEqual(options.url, ['http://localhost:3000'])
    assert.deepEqual(options.editors, [10, 25, 50, 100, 150])
    assert.equal(options.perRoom, 5)
    assert.equal(options.rate, 5)
    assert.equal(options.warmupMs, 10000)
    assert.equal(options.durationMs, 30000)
    assert.equal(options.ackTimeoutMs, 5000)
    assert.equal(options.awarenessRate, 2)
    assert.equal(options.spawn, null)
    assert.equal(options.out, 'loadtest/reports')
    assert.equal(options.sloAckP99Ms, 50)
    assert.equal(options.sloBroadcastP99Ms, 100)
    assert.equal(options.runs, 1)
    assert.equal(options.client, 'socket.io')
    assert.ok(Object.isFrozen(options))
  })

  it('parses durations, sizes, lists and `all`', () => {
    const options = parseOptions(['--editors', '10,25', '--per-room', 'all', '--duration', '2m', '--warmup', '500ms',
      '--ack-timeout', '5s', '--doc-size', '1MB', '--workers', '2', '--spawn', 'single', '--json', '--token', 't', '--api-key', 'k'])
    assert.deepEqual(options.editors, [10, 25])
    assert.equal(options.perRoom, Infinity)
    assert.equal(options.durationMs, 120000)
    assert.equal(options.warmupMs, 500)
    assert.equal(options.ackTimeoutMs, 5000)
    assert.equal(options.docSize, 1000000)
    assert.equal(options.workers, 2)
    assert.equal(options.spawn, 'single')
    assert.equal(options.json, true)
    assert.equal(options.token, 't')
    assert.equal(options.apiKey, 'k')
  })

  it('refuses bad values, naming the flag', () => {
    const cases = [
      [['--editors', '10,x'], /--editors/],
      [['--rate', '0'], /--rate/],
      [['--duration', 'soon'], /--duration/],
      [['--spawn', 'swarm'], /--spawn .*single, cluster/],
      [['--doc-size', '1 parsec'], /--doc-size/],
      [['--url', 'ftp://localhost'], /--url/],
      [['--bogus'], /bogus/],
      [['--url', 'http://example.com:3000'], /--allow-remote/],
      [['--url', 'http://localhost:4000,http://example.com:3000'], /--url http:\/\/example.com:3000 .*--allow-remote/],
      [['--url', 'http://localhost:4000,http://localhost:4000/'], /--url .*listed twice/],
      [['--url', 'http://localhost:4000', '--spawn', 'single'], /exclusive/],
      [['--trace', 'x.json', '--doc-size', '1MB'], /exclusive/],
      [['--runs', '0'], /--runs "0"/],
      [['--client', 'grpc'], /--client "grpc": expected one of socket.io, wire/],
      [['--soak', '1m', '--runs', '2'], /--soak and --runs are exclusive/]
    ]
    for (const [argv, message] of cases) {
      assert.throws(() => parseOptions(/** @type {string[]} */ (argv)), (err) => err instanceof OptionError && /** @type {RegExp} */ (message).test(err.message), String(argv))
    }
    assert.deepEqual(parseOptions(['--url', 'http://example.com', '--allow-remote']).url, ['http://example.com'])
  })

  it('takes a comma-separated --url as the processes of one server, in order', () => {
    assert.deepEqual(parseOptions(['--url', 'http://127.0.0.1:4001, http://127.0.0.1:4002/']).url, ['http://127.0.0.1:4001', 'http://127.0.0.1:4002'])
  })

  it('explains every option in --help, with its default', async () => {
    const help = helpText()
    for (const flag of ['--url', '--editors', '--per-room', '--rate', '--duration', '--warmup', '--payload', '--ack-timeout',
      '--awareness-rate', '--trace', '--doc-size', '--join-storm', '--spawn', '--out', '--json', '--api-key', '--token', '--help']) {
      assert.match(help, new RegExp(`^  ${flag}\\b`, 'm'), flag)
    }
    assert.equal(help.match(/^ {2}--/gm)?.length, OPTION_SPECS.length)
    const unwrapped = help.replace(/\n {3,}/g, ' ')
    assert.match(unwrapped, /--editors LIST +.*\(default 10,25,50,100,150\)/)
    assert.match(unwrapped, /--ack-timeout TIME +.*\(default 5s\)/)
    const { stdout } = await run(process.execPath, [CLI, '--help'])
    assert.equal(stdout, help)
  })

  it('exits 2 with the flag named when an option is wrong', async () => {
    await assert.rejects(run(process.execPath, [CLI, '--rate', 'fast']), (/** @type {any} */ err) => err.code === 2 && /--rate "fast"/.test(err.stderr))
  })

  it('has every bench say which flag is wrong with exit code 2, and print its help with --help', async () => {
    for (const [bench, name] of [['bench/scale.js', 'bench scale'], ['bench/redis-footprint.js', 'bench footprint'], ['bench/peers/cli.js', 'peers']]) {
      const path = new URL(`../${bench}`, import.meta.url).pathname
      await assert.rejects(run(process.execPath, [path, '--no-such-flag']), (/** @type {any} */ err) =>
        err.code === 2 && err.stderr.startsWith(`${name}: `) && err.stderr.includes('--no-such-flag') && err.stdout === '', bench)
      const { stdout } = await run(process.execPath, [path, '--help'])
      assert.match(stdout, /^Usage: /, bench)
    }
  })
})
