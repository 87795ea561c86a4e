import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, it } from 'node:test'

const run = promisify(execFile)
const MEMORY_BENCH = new URL('../bench/memory.js', import.meta.url).pathname
const HEAP_BENCH = new URL('../bench/heap.js', import.meta.url).pathname

describe('the memory bench (npm run bench)', () => {
  it('reports the RSS per idle editor and per loaded document of a real server, and how much of it is V8\'s young generation', async () => {
    const { stdout } = await run(process.execPath, [MEMORY_BENCH], { env: { ...process.env, EDITORS: '10', DOCUMENTS: '4' }, timeout: 120000 })
    const perEditor = Number(/Memory per idle connected editor: (-?[\d.]+) KiB/.exec(stdout)?.[1])
    const young = /V8's young generation: (-?[\d.]+) KiB per editor \(([\d.]+) → ([\d.]+) MiB.*without it: (-?[\d.]+) KiB/.exec(stdout)
    assert.ok(young, stdout)
    const [youngPerEditor, startMiB, withEditorsMiB, withoutYoung] = young.slice(1).map(Number)
    assert.ok(Number.isFinite(perEditor), stdout)
    // V8 resizes its young generation both ways (a few editors may find it smaller than at start); its
    // change is split off (the MiB are printed rounded to 0.1: they bound it to within 10 KiB per editor).
    assert.ok(startMiB > 0 && withEditorsMiB > 0, stdout)
    assert.ok(Math.abs(youngPerEditor - (withEditorsMiB - startMiB) * 1024 / 10) <= 10.3, stdout)
    assert.ok(Math.abs(withoutYoung - (perEditor - youngPerEditor)) < 0.15, stdout)
  })

  it('reports the live heap per idle editor from two heap snapshots of a real server, by kind of object', async () => {
    const { stdout } = await run(process.execPath, [HEAP_BENCH], { env: { ...process.env, EDITORS: '10' }, timeout: 120000 })
    const match = /Live heap per idle editor .*: ([\d.]+) KiB; largest kinds: (.*)$/m.exec(stdout)
    assert.ok(match, stdout)
    // Each connected editor keeps its sockets (TCP, Engine.IO, Socket.IO) and its membership alive.
    assert.ok(Number(match[1]) > 1, stdout)
    const kinds = match[2].split(', ').map(entry => Number(/ (-?\d+) B$/.exec(entry)?.[1]))
    assert.equal(kinds.length, 8, stdout)
    assert.deepEqual(kinds, [...kinds].sort((a, b) => b - a), stdout)
  })
})
