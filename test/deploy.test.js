import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { promisify } from 'node:util'
import { describe, it } from 'node:test'
import { Writable } from 'node:stream'
import pino from 'pino'
import { parse } from 'yaml'
import { createServer } from '../server/app.js'
import { ENVIRONMENT, loadConfig } from '../server/config.js'
import { tempDataDir } from './helpers/server.js'

// No Docker engine or Render account here: these tests read the deploy files and check what users
// rely on: Redis persistence, the wiring between services, health checks, the WebSocket proxy, and
// that every variable set is one the server reads, with a value it accepts, and where a server
// configured as the image configures it listens (built, not started).

const root = new URL('../', import.meta.url)
const read = (/** @type {string} */ path) => readFileSync(new URL(path, root), 'utf8')

// Compose files share settings through `x-` extensions and YAML merge keys, as Docker Compose does.
const compose = parse(read('docker-compose.yml'), { merge: true })
const blueprint = parse(read('render.yaml'))
const nginx = read('deploy/nginx.conf').replace(/#.*$/gm, '')
const dockerfile = instructions(read('Dockerfile'))
const pkg = JSON.parse(read('package.json'))
const deployment = read('docs/DEPLOYMENT.md')
const readme = read('README.md')
const envExample = parseEnvFile(read('.env.example'))
const dockerignore = read('.dockerignore').split('\n').map(line => line.trim()).filter(line => line && !line.startsWith('#'))
const run = promisify(execFile)

const READ_BY_SERVER = new Set(ENVIRONMENT.map(({ env }) => env))
// WORKERS is read by ecosystem.config.js, NODE_ENV by Node's ecosystem (npm, Express), NODE_VERSION
// by Render (which Node it installs).
const ALLOWED = new Set([...READ_BY_SERVER, 'WORKERS', 'NODE_ENV', 'NODE_VERSION'])
// The Node LTS that CI runs the suite on besides Node 20 (.ci/run), and that deploys use.
const LTS_MAJOR = /LTS_MAJOR="\$\{LTS_MAJOR:-(\d+)\}"/.exec(read('.ci/run'))?.[1]
const APPS = ['app', 'app2']
const MAX_BODY_BYTES = Number(ENVIRONMENT.find(({ env }) => env === 'MAX_BODY_BYTES')?.default)

// What an operator puts in the shell or .env for `docker compose up`.
const OPERATOR_ENV = { AUTH_SECRET: 'an-operator-secret-of-at-least-32-chars', API_KEY: 'operator-api-key-16', METRICS_TOKEN: 'operator-metrics-token' }

/**
 * A compose `environment`, as a map or a list of KEY=VALUE, as strings, with `${NAME}` and
 * `${NAME:?message}` taken from OPERATOR_ENV as Compose would, and `${NAME:-default}` from it or
 * the default.
 * @param {any} service
 */
function envOf (service) {
  const env = service.environment ?? {}
  /** @type {[string, unknown][]} */
  const entries = Array.isArray(env)
    ? env.map((/** @type {string} */ line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)])
    : Object.entries(env)
  const interpolate = (/** @type {string} */ value) => value.replace(/\$\{(\w+)(?::\?[^}]*|:-([^}]*))?\}/g, (_, name, fallback) => {
    const given = OPERATOR_ENV[/** @type {keyof typeof OPERATOR_ENV} */ (name)] ?? fallback
    assert.ok(given !== undefined, `docker-compose.yml needs \${${name}} from the operator, which docs/DEPLOYMENT.md does not ask for`)
    return given
  })
  return Object.fromEntries(entries.map(([key, value]) => [key, interpolate(String(value ?? ''))]))
}

/** KEY=VALUE lines of an env file, comments and blank lines skipped. @param {string} text */
function parseEnvFile (text) {
  return Object.fromEntries(text.split('\n').map(line => line.trim()).filter(line => line && !line.startsWith('#'))
    .map(line => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]))
}

/** .env.example as an operator fills it in: each empty secret given a generated value. */
const filledEnvExample = () => Object.fromEntries(Object.entries(envExample)
  .map(([key, value]) => [key, value || OPERATOR_ENV[/** @type {keyof typeof OPERATOR_ENV} */ (key)] || '']))

/** A compose command or healthcheck test as one string. @param {string | string[] | undefined} value */
const commandOf = value => (Array.isArray(value) ? value.join(' ') : value ?? '')

/** Dockerfile instructions as [keyword, arguments], continuation lines joined. @param {string} text */
function instructions (text) {
  return text.replace(/\\\n/g, ' ').split('\n')
    .map(line => line.trim())
    .filter(line => line && !line.startsWith('#'))
    .map(line => /** @type {[string, string]} */ ([line.split(/\s+/)[0].toUpperCase(), line.slice(line.search(/\s/) + 1).trim()]))
}

/** The body of the first nginx block whose header matches, braces balanced. @param {RegExp} header */
function nginxBlock (header) {
  const match = header.exec(nginx)
  assert.ok(match, `nginx.conf has no block matching ${header}`)
  const start = match.index + match[0].length
  let depth = 1
  for (let i = start; i < nginx.length; i++) {
    if (nginx[i] === '{') depth++
    if (nginx[i] === '}' && --depth === 0) return nginx.slice(start, i)
  }
  throw new Error(`unbalanced braces after ${header}`)
}

/** The arguments of each `name` directive in a block body. @param {string} body @param {string} name */
const directives = (body, name) => body.split(/[;{}]/).map(s => s.trim().split(/\s+/)).filter(([n]) => n === name).map(([, ...args]) => args.join(' '))

/**
 * A location's `name` directives as nginx applies them: its own, or if it has none, those of its
 * server block (outside any location).
 * @param {RegExp} location @param {string} name
 */
function effective (location, name) {
  const own = directives(nginxBlock(location), name)
  if (own.length > 0) return own
  const server = nginxBlock(/server\s*\{/).replace(/location[^{]*\{[^}]*\}/g, '')
  return directives(server, name)
}

/**
 * The command starts pm2-runtime with the ecosystem file, and not through npm or npx: those run it
 * under `sh -c`, which does not pass SIGTERM on, so workers would be killed without draining.
 * @param {string} command
 */
function assertStartsPm2Runtime (command) {
  assert.match(command, /pm2-runtime\s+ecosystem\.config\.js/)
  assert.doesNotMatch(command, /^(npx|npm)\b/, `${command}: SIGTERM would not reach pm2-runtime`)
}

/** nginx size (`2m`, `512k`, bytes) in bytes. @param {string} size */
const bytes = size => Number.parseInt(size, 10) * ({ k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[size.slice(-1).toLowerCase()] ?? 1)

/** nginx time (`3600s`, `1h`, `60`) in seconds. @param {string} time */
const seconds = time => Number.parseInt(time, 10) * ({ s: 1, m: 60, h: 3600, d: 86400 }[time.slice(-1)] ?? 1)

describe('docker-compose.yml', () => {
  const { services } = compose

  it('defines redis, two app hosts and nginx', () => {
    for (const name of ['redis', ...APPS, 'nginx']) assert.ok(services[name], `service ${name} is missing`)
  })

  it('runs Redis with append-only persistence on a named volume, with a health check', () => {
    const command = commandOf(services.redis.command)
    assert.match(command, /--appendonly\s+yes/)
    assert.match(command, /--appendfsync\s+(everysec|always)/)
    const mount = services.redis.volumes.map(String).find((/** @type {string} */ v) => v.split(':')[1] === '/data')
    assert.ok(mount, 'redis mounts nothing at /data')
    assert.ok(mount.split(':')[0] in (compose.volumes ?? {}), `${mount} is not a named volume`)
    assert.match(commandOf(services.redis.healthcheck?.test), /redis-cli.*ping/)
  })

  for (const name of APPS) {
    it(`connects ${name} to the redis service and binds every interface`, () => {
      const env = envOf(services[name])
      const url = new URL(env.REDIS_URL)
      assert.equal(url.protocol, 'redis:')
      assert.equal(url.hostname, 'redis')
      assert.equal(url.port || '6379', '6379')
      assert.equal(env.HOST, '0.0.0.0')
      assert.match(env.WORKERS, /^[1-9]\d*$/, 'WORKERS must be a count: `max` would count the Docker host\'s CPUs')
    })

    it(`runs ${name} as a PM2 cluster built from the Dockerfile`, () => {
      assert.ok(services[name].build, `${name} is not built from the Dockerfile`)
      assertStartsPm2Runtime(commandOf(services[name].command) || cmdOfDockerfile())
    })

    it(`checks ${name}'s health on /api/health and starts it once redis is healthy`, () => {
      const port = envOf(services[name]).PORT || '3000'
      assert.match(commandOf(services[name].healthcheck?.test), new RegExp(`:${port}/api/health`))
      assert.equal(services[name].depends_on?.redis?.condition, 'service_healthy')
      // Docker's default 10 s would cut short PM2's kill_timeout (15 s) and a worker's drain.
      assert.ok(seconds(services[name].stop_grace_period ?? '10s') > 15, 'stop_grace_period must exceed kill_timeout')
    })
  }

  it('gives each host its own NODE_NAME, so metrics tell their workers apart', () => {
    const names = APPS.map(name => envOf(services[name]).NODE_NAME)
    for (const nodeName of names) assert.ok(nodeName, 'NODE_NAME is empty')
    assert.equal(new Set(names).size, names.length)
  })

  it('publishes nginx and mounts deploy/nginx.conf into it', () => {
    assert.ok(services.nginx.ports?.length > 0, 'nginx publishes no port')
    const mount = services.nginx.volumes.map(String).find((/** @type {string} */ v) => v.split(':')[0] === './deploy/nginx.conf')
    assert.ok(mount, 'nginx does not mount ./deploy/nginx.conf')
    assert.match(mount.split(':')[1], /^\/etc\/nginx\//)
    for (const name of APPS) assert.ok(services.nginx.depends_on?.[name], `nginx does not wait for ${name}`)
  })
})

describe('deploy/nginx.conf', () => {
  const socketIo = /location\s+\/socket\.io\/\s*\{/
  const upstreamName = /^http:\/\/([\w-]+)$/.exec(directives(nginxBlock(/location\s+\/api\/\s*\{/), 'proxy_pass')[0] ?? '')?.[1]
  const sessionsName = /^http:\/\/([\w-]+)$/.exec(effective(socketIo, 'proxy_pass')[0] ?? '')?.[1]
  const upstreamOf = (/** @type {string | undefined} */ name) => nginxBlock(new RegExp(`upstream\\s+${name}\\s*\\{`))

  it('balances over both app hosts, Socket.IO connections and the rest alike', () => {
    const expected = APPS.map(name => `${name}:${envOf(compose.services[name]).PORT || '3000'}`)
    for (const name of [upstreamName, sessionsName]) {
      const servers = directives(upstreamOf(name), 'server').map(args => args.split(/\s+/)[0])
      assert.deepEqual(servers.sort(), expected.sort(), `upstream ${name}`)
    }
  })

  it('sends every Socket.IO connection of a session to one server, by the session its handshake names', () => {
    const [hash] = directives(upstreamOf(sessionsName), 'hash')
    const key = /^(\$\w+) consistent$/.exec(hash ?? '')?.[1]
    assert.ok(key, `upstream ${sessionsName} does not hash consistently: ${hash}`)
    const map = nginxBlock(new RegExp(`map\\s+\\$arg_session\\s+\\${key}\\s*\\{`))
    assert.deepEqual(directives(map, 'default'), ['$arg_session'])
  })

  it('proxies /socket.io/ with the WebSocket upgrade headers and a long read timeout', () => {
    assert.deepEqual(effective(socketIo, 'proxy_http_version'), ['1.1'])
    const headers = effective(socketIo, 'proxy_set_header')
    assert.ok(headers.includes('Upgrade $http_upgrade'), 'no Upgrade header')
    const connection = headers.find(h => h.startsWith('Connection '))
    assert.match(connection ?? '', /^Connection (\$connection_upgrade|"?upgrade"?)$/i)
    assert.ok(seconds(effective(socketIo, 'proxy_read_timeout')[0] ?? '60s') >= 300, 'proxy_read_timeout is short')
  })

  it('proxies the REST API and the editor page to the same hosts', () => {
    for (const location of [/location\s+\/api\/\s*\{/, /location\s+\/\s*\{/]) {
      assert.deepEqual(directives(nginxBlock(location), 'proxy_pass'), [`http://${upstreamName}`])
    }
  })

  it('compresses what the hosts send uncompressed, and passes their precompressed assets through', () => {
    const server = nginxBlock(/server\s*\{/).replace(/location[^{]*\{[^}]*\}/g, '')
    assert.deepEqual(directives(server, 'gzip'), ['on'])
    assert.deepEqual(directives(server, 'gzip_proxied'), ['any'], 'proxied responses would go uncompressed')
    assert.match(directives(server, 'gzip_types').join(' '), /application\/json/)
  })

  it('serves /assets/ from the build with its .gz copies and a year of caching, else from the hosts', () => {
    const assets = nginxBlock(/location\s+\/assets\/\s*\{/)
    assert.deepEqual(directives(assets, 'gzip_static'), ['on'])
    assert.ok(directives(assets, 'add_header').includes('Cache-Control "public, max-age=31536000, immutable"'))
    const fallback = /@\w+/.exec(directives(assets, 'try_files')[0] ?? '')?.[0]
    assert.ok(fallback, 'no fallback to the hosts when the build is not beside nginx')
    assert.deepEqual(directives(nginxBlock(new RegExp(`location\\s+${fallback}\\s*\\{`)), 'proxy_pass'), [`http://${upstreamName}`])
  })

  it('accepts request bodies as large as the server does', () => {
    const limit = directives(nginx, 'client_max_body_size')[0] ?? '1m'
    assert.ok(bytes(limit) >= MAX_BODY_BYTES, `client_max_body_size ${limit} < MAX_BODY_BYTES ${MAX_BODY_BYTES}`)
  })
})

describe('render.yaml', () => {
  const web = blueprint.services.find((/** @type {any} */ s) => s.type === 'web')
  const keyValue = blueprint.services.find((/** @type {any} */ s) => s.type === 'keyvalue')

  it('runs the PM2 cluster on a Node web service, health-checked on /api/health', () => {
    assert.equal(web.runtime, 'node')
    assert.match(web.buildCommand, /npm ci/)
    assert.match(web.buildCommand, /npm run build/)
    assertStartsPm2Runtime(web.startCommand)
    assert.equal(web.healthCheckPath, '/api/health')
  })

  it('runs on the Node LTS that CI tests, which package.json engines allow', () => {
    assert.equal(envOfRender(web).NODE_VERSION, LTS_MAJOR)
    for (const major of ['20', LTS_MAJOR]) assert.match(pkg.engines.node, new RegExp(`\\^${major}\\.|>=\\s*${major}\\.`), `engines leave out Node ${major}`)
  })

  it('takes REDIS_URL from the Key Value instance\'s connection string', () => {
    const redisUrl = web.envVars.find((/** @type {any} */ v) => v.key === 'REDIS_URL')
    assert.deepEqual(redisUrl?.fromService, { type: 'keyvalue', name: keyValue.name, property: 'connectionString' })
    assert.equal(envOfRender(web).HOST, '0.0.0.0')
  })

  it('keeps the Key Value instance internal, persistent and free of eviction', () => {
    assert.deepEqual(keyValue.ipAllowList, [])
    assert.equal(keyValue.maxmemoryPolicy, 'noeviction')
    assert.notEqual(keyValue.plan ?? 'starter', 'free', 'free Key Value instances do not persist data')
  })
})

describe('environment of the deploy files', () => {
  const sets = [
    ...APPS.map(name => ({ where: `docker-compose.yml ${name}`, env: envOf(compose.services[name]) })),
    { where: 'render.yaml', env: envOfRender(blueprint.services.find((/** @type {any} */ s) => s.type === 'web')) }
  ]

  it('sets only variables the server or the PM2 ecosystem reads', () => {
    for (const { where, env } of sets) {
      for (const key of Object.keys(env)) assert.ok(ALLOWED.has(key), `${where} sets ${key}, which nothing reads`)
    }
  })

  it('sets values the server accepts', () => {
    for (const { where, env } of sets) {
      assert.doesNotThrow(() => loadConfig(env), `${where}: the server would refuse to start`)
    }
  })
})

describe('Dockerfile', () => {
  it('builds on the Node LTS that CI tests, bundles the client and drops dev dependencies', () => {
    assert.ok(LTS_MAJOR, '.ci/run names no LTS_MAJOR')
    const stages = dockerfile.filter(([op]) => op === 'FROM').map(([, args]) => args)
    assert.ok(stages.length > 0 && stages.every(image => new RegExp(`^node:${LTS_MAJOR}\\b`).test(image)), `not Node ${LTS_MAJOR}: ${stages}`)
    const runs = dockerfile.filter(([op]) => op === 'RUN').map(([, args]) => args).join(' && ')
    for (const step of [/npm ci/, /npm run build/, /npm prune --omit=dev/]) assert.match(runs, step)
    // The image keeps dependencies only: pm2-runtime must be one of them.
    assert.ok(pkg.dependencies.pm2, 'pm2 is not a runtime dependency')
  })

  it('runs pm2-runtime ecosystem.config.js as a non-root user', () => {
    assertStartsPm2Runtime(cmdOfDockerfile())
    const user = dockerfile.filter(([op]) => op === 'USER').at(-1)?.[1]
    assert.ok(user && !['root', '0'].includes(user), 'the image runs as root')
  })

  it('has a health check on /api/health', () => {
    const check = dockerfile.find(([op]) => op === 'HEALTHCHECK')
    assert.ok(check, 'no HEALTHCHECK')
    assert.match(check[1], /\/api\/health/)
  })

  it('keeps node_modules, the client build, secrets, tests, reports and the benchmarks out of the build context', () => {
    for (const path of ['node_modules', 'client/dist', '.env', 'test', 'reports', 'bench']) {
      assert.ok(dockerignore.includes(path), `${path} is not in .dockerignore`)
    }
    // What the image builds and runs must stay in.
    for (const path of ['server', 'client', 'scripts', 'ecosystem.config.js', 'package.json']) {
      assert.ok(!dockerignore.some(line => path === line || path.startsWith(`${line}/`)), `${path} is ignored`)
    }
  })

  it('runs the server on jemalloc, which gives freed memory back to the system', () => {
    const stages = dockerfile.map(([op], index) => op === 'FROM' ? index : -1).filter(index => index !== -1)
    const runtime = dockerfile.slice(stages.at(-1))
    const runs = runtime.filter(([op]) => op === 'RUN').map(([, args]) => args).join(' && ')
    assert.match(runs, /apt-get install [^&]*\blibjemalloc2\b/)
    const preload = /LD_PRELOAD=(\S+)/.exec(runtime.filter(([op]) => op === 'ENV').map(([, args]) => args).join(' '))?.[1]
    assert.ok(preload, 'the runtime stage sets no LD_PRELOAD')
    assert.ok(runs.includes(`ln -s "/usr/lib/$(uname -m)-linux-gnu/libjemalloc.so.2" ${preload}`), `nothing puts jemalloc at ${preload}`)
  })

  it('sets NODE_ENV=production, so it needs secrets at run time', () => {
    assert.equal(imageEnv().NODE_ENV, 'production')
  })

  it('binds every interface of the container, and with auth off (NODE_ENV=development) warns so, naming it', async (t) => {
    assert.equal(imageEnv().HOST, '0.0.0.0', 'without auth the server would bind 127.0.0.1, out of reach of -p 3000:3000')
    const data = await tempDataDir()
    t.after(() => data.remove())
    // As `docker run -e NODE_ENV=development` configures it; not listening, so nothing binds here.
    const config = loadConfig({ ...imageEnv(), NODE_ENV: 'development' }, { dataDir: data.dir, logLevel: 'silent' })
    assert.equal(config.host, '0.0.0.0')
    /** @type {any[]} */
    const lines = []
    const logger = pino({ level: 'warn' }, new Writable({ write (chunk, encoding, done) { lines.push(JSON.parse(String(chunk))); done() } }))
    const server = await createServer(config, { logger })
    await server.close()
    const warning = lines.find(line => /AUTH IS OFF/.test(line.msg))
    assert.match(warning?.msg ?? '', /listens on 0\.0\.0\.0/)
    assert.doesNotMatch(warning?.msg ?? '', /127\.0\.0\.1/)
  })
})

describe('.env.example and the Docker commands of the README and docs/DEPLOYMENT.md', () => {
  it('lists the secrets docker-compose.yml asks for, and only variables something reads', () => {
    const asked = [...read('docker-compose.yml').matchAll(/\$\{(\w+):\?/g)].map(([, name]) => name)
    assert.ok(asked.length >= 3)
    for (const name of asked) assert.ok(name in envExample, `.env.example lacks ${name}`)
    for (const key of Object.keys(envExample)) assert.ok(ALLOWED.has(key), `.env.example sets ${key}, which nothing reads`)
  })

  it('once its secrets are filled in, is a configuration the image (NODE_ENV=production) accepts', () => {
    assert.throws(() => loadConfig({ NODE_ENV: 'production', ...envExample }), /AUTH_SECRET/, 'empty secrets are refused')
    assert.doesNotThrow(() => loadConfig({ NODE_ENV: 'production', ...filledEnvExample() }))
    assert.match(envExample.WORKERS ?? '', /^[1-9]\d*$/)
  })

  it('gives docker run the env file, the host .env.example\'s Redis is on, and a stop timeout longer than PM2\'s kill_timeout', () => {
    assert.ok(/^\s*docker run /m.test(deployment), 'docs/DEPLOYMENT.md shows no docker run')
    const commands = `${readme}\n${deployment}`.split('\n').filter(line => /^\s*docker run /.test(line))
    // Docker Desktop resolves host.docker.internal by itself; on Linux only --add-host names it.
    assert.equal(new URL(envExample.REDIS_URL).hostname, 'host.docker.internal')
    for (const command of commands) {
      assert.match(command, /--env-file \.env\b/, `${command}: no secrets passed`)
      assert.match(command, /--add-host[ =]host\.docker\.internal:host-gateway\b/, `${command}: REDIS_URL does not resolve on Linux`)
      assert.ok(Number(/--stop-timeout[ =](\d+)/.exec(command)?.[1] ?? 10) > 15, `${command}: docker stop would cut the drain short`)
    }
    assert.match(deployment, /cp \.env\.example \.env/)
  })

  it('stops pm2-runtime at once, naming the variable, when the image runs without secrets', async () => {
    const load = (/** @type {Record<string, string>} */ env) => run(process.execPath, ['-e', "require('./ecosystem.config.js')"], {
      cwd: new URL('.', root), env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', ...env }
    })
    await assert.rejects(load({}), (/** @type {any} */ err) => {
      assert.match(err.stderr, /production \(NODE_ENV=production\) needs AUTH_SECRET and API_KEY/)
      return true
    })
    const { stdout } = await run(process.execPath, ['-e', "console.log(require('./ecosystem.config.js').apps[0].instances)"], {
      cwd: new URL('.', root), env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', ...filledEnvExample() }
    })
    assert.equal(stdout.trim(), envExample.WORKERS)
  })
})

/** The runtime stage's ENV, as KEY=VALUE pairs. @returns {Record<string, string>} */
function imageEnv () {
  const runtime = dockerfile.slice(dockerfile.map(([op]) => op).lastIndexOf('FROM'))
  return Object.fromEntries(runtime.filter(([op]) => op === 'ENV')
    .flatMap(([, args]) => args.split(/\s+/).map(pair => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)])))
}

/** The image's CMD as one string. */
function cmdOfDockerfile () {
  const cmd = dockerfile.filter(([op]) => op === 'CMD').at(-1)?.[1] ?? ''
  return cmd.startsWith('[') ? JSON.parse(cmd).join(' ') : cmd
}

/**
 * A Render service's variables as strings; one taken from another service stands in as a value of
 * the shape Render gives it.
 * @param {any} service
 */
function envOfRender (service) {
  return Object.fromEntries(service.envVars.map((/** @type {any} */ v) => [
    v.key,
    v.fromService?.property === 'connectionString'
      ? 'redis://red-example:6379'
      // Render generates a base64 256-bit value.
      : v.generateValue ? 'R2VuZXJhdGVkQnlSZW5kZXJBdERlcGxveVRpbWUxMjM0NTY=' : String(v.value ?? '')
  ]))
}
