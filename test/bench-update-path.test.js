import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, it } from 'node:test'

const run = promisify(execFile)
const UPDATE_PATH_BENCH = new URL('../bench/update-path.js', import.meta.url).pathname

describe('the update path bench (npm run bench)', () => {
  it('reports the CPU per update of check, apply, encode and store, over documents that then hold every update', async () => {
    const { stdout } = await run(process.execPath, [UPDATE_PATH_BENCH], {
      env: { ...process.env, DOCUMENTS: '4', UPDATES: '30', ROUNDS: '3' },
      timeout: 120000
    })
    const match = /median ([\d.]+) µs of CPU per update over 3 rounds of 120 after one to warm up \(([\d.]+)–([\d.]+)\)/.exec(stdout)
    assert.ok(match, stdout)
    const [median, lowest, highest] = match.slice(1).map(Number)
    // The bench throws, and prints nothing, when a document read back from storage lacks an update it took.
    assert.ok(median > 0 && lowest <= median && median <= highest, stdout)
  })
})
