import assert from 'node:assert/strict'
import { Writable } from 'node:stream'
import { describe, it } from 'node:test'
import pino from 'pino'
import { createAudit } from '../server/audit.js'
import { manualClock } from './helpers/server.js'

// Refusals a client can repeat as fast as it sends are sampled: what a flood writes to the log, and
// that every refusal left out is still counted somewhere.

function auditWithLines () {
  /** @type {any[]} */
  const lines = []
  const logger = pino({ level: 'info' }, new Writable({ write (chunk, encoding, done) { lines.push(JSON.parse(String(chunk))); done() } }))
  const clock = manualClock()
  return { audit: createAudit(logger, { now: clock.now }), lines, clock }
}

describe('audit lines of repeated refusals', () => {
  it('counts an IPv6 client by its /64: twenty addresses of one /64 write one line', (t) => {
    const { audit, lines } = auditWithLines()
    t.after(() => audit.close())
    for (let i = 1; i <= 20; i++) audit.refusedFrom('http.metrics', { ip: `2001:db8:1:2::${i.toString(16)}`, reason: 'the metrics token is not valid' })
    audit.refusedFrom('http.metrics', { ip: '2001:db8:1:3::1', reason: 'the metrics token is not valid' })
    assert.deepEqual(lines.map(line => line.ip), ['2001:db8:1:2::1', '2001:db8:1:3::1'])
  })

  it('keeps each code apart: a bad token after a rate limit still gets its own line', (t) => {
    const { audit, lines } = auditWithLines()
    t.after(() => audit.close())
    for (let i = 0; i < 5; i++) audit.refusedFrom('socket.connect', { ip: '192.0.2.7', code: 'RATE_LIMITED', reason: 'too many' })
    audit.refusedFrom('socket.connect', { ip: '192.0.2.7', code: 'UNAUTHORIZED', reason: 'token expired' })
    assert.deepEqual(lines.map(line => line.code), ['RATE_LIMITED', 'UNAUTHORIZED'])
  })

  it('writes the count of those left out when their 10 s are over, whether or not the client comes back', (t) => {
    t.mock.timers.enable({ apis: ['setInterval'] })
    const { audit, lines, clock } = auditWithLines()
    t.after(() => audit.close())
    for (let i = 0; i < 30; i++) audit.refusedFrom('http.auth', { ip: '192.0.2.8', method: 'POST', path: '/api/sessions', reason: 'the API key is not valid' })
    assert.equal(lines.length, 1)
    clock.advance(10_000)
    t.mock.timers.tick(10_000)
    assert.equal(lines.length, 2)
    assert.equal(lines[1].unlogged, 29)
    assert.equal(lines[1].ip, '192.0.2.8')
    assert.equal(lines[1].action, 'http.auth')
    audit.refusedFrom('http.auth', { ip: '192.0.2.8', method: 'POST', path: '/api/sessions', reason: 'the API key is not valid' })
    assert.equal(lines.length, 3, 'a new window starts with a line')
    assert.equal(lines[2].unlogged, undefined)
  })

  it('remembers a bounded number of addresses, writing out the count of one it forgets', (t) => {
    const { audit, lines } = auditWithLines()
    t.after(() => audit.close())
    audit.refusedFrom('http.rate', { ip: '198.51.100.1', method: 'GET', path: '/api/sessions' })
    audit.refusedFrom('http.rate', { ip: '198.51.100.1', method: 'GET', path: '/api/sessions' })
    for (let i = 0; i < 10_000; i++) audit.refusedFrom('http.rate', { ip: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, method: 'GET', path: '/api/sessions' })
    const forgotten = lines.find(line => line.ip === '198.51.100.1' && line.unlogged === 1)
    assert.ok(forgotten, 'the refusal left out is counted when its address is forgotten')
    assert.equal(lines.length, 10_002)
  })

  it('writes out what it left out when it closes', () => {
    const { audit, lines } = auditWithLines()
    audit.refusedFrom('http.rate', { ip: '203.0.113.9', method: 'GET', path: '/api/sessions' })
    audit.refusedFrom('http.rate', { ip: '203.0.113.9', method: 'GET', path: '/api/sessions' })
    audit.close()
    assert.deepEqual(lines.map(line => line.unlogged), [undefined, 1])
  })
})
