import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { startChildServer } from './helpers/child-server.js'
import { TestEditor } from './helpers/editor.js'
import { eventually } from './helpers/eventually.js'
import { deferrals } from './helpers/processes.js'
import { api, createSession } from './helpers/server.js'
import { mountSmallDisk, smallDiskUnavailable } from './helpers/small-disk.js'

// A full disk under load refuses thousands of updates a second; the log must say so once per
// interval, not once per refusal, or it fills whatever disk it is written to as well.

const SESSIONS = 8
const UPDATES_EACH = 25

describe('storage failure: the log', { skip: await smallDiskUnavailable() }, () => {
  it('logs a burst of updates refused by a full disk in a couple of error lines, and their recovery in one', async (t) => {
    const defer = deferrals(t)
    const disk = await mountSmallDisk(8)
    defer(() => disk.remove())
    const server = await startChildServer({ DATA_DIR: join(disk.dir, 'data'), UPDATES_PER_SECOND: '0', REST_PER_MINUTE: '0', MAX_CONNECTIONS_PER_IP: '0' })
    defer(() => server.stop('SIGKILL'))
    const editors = []
    for (let i = 0; i < SESSIONS; i++) {
      const { id } = await createSession(server.url)
      const editor = new TestEditor(server.url)
      defer(() => editor.close())
      await editor.join(id)
      editors.push({ editor, id })
    }
    await disk.fill()
    const since = server.logs.length

    // Every editor types at once. The first refusal drops the document and its editors; each then
    // tries to join again (refused while storage cannot open) and types on: a burst of refusals.
    const replies = await Promise.all(editors.map(async ({ editor, id }) => {
      const codes = []
      for (let i = 0; i < UPDATES_EACH; i++) {
        if (!editor.docs.has(id)) {
          const joined = await editor.join(id)
          codes.push(joined.ok ? 'ok' : joined.error.code)
          if (!joined.ok) continue
        }
        const reply = await editor.insert(id, 0, `<${i}>${'.'.repeat(2000)}`)
        codes.push(reply.ok ? 'ok' : reply.error.code)
        if (!reply.ok) {
          // Rejoin on a fresh copy, as a reloaded page does: its next update reaches storage again.
          editor.docs.get(id)?.destroy()
          editor.docs.delete(id)
        }
      }
      return codes
    }))
    const refused = replies.flat().filter(code => code === 'UNAVAILABLE')
    assert.ok(refused.length >= SESSIONS * 5, `refused by storage: ${refused.length} of ${replies.flat()}`)
    assert.equal((await api(server.url, '/api/health')).status, 503)

    await disk.free()
    await eventually(async () => (await api(server.url, '/api/health')).status === 200, { what: 'healthy once space is back' })
    // The server logs its recovery before health answers 200, but the line comes over its stdout,
    // which this process may read after the health check's reply.
    const recovered = () => server.logs.slice(since).filter(entry => entry.msg === 'storage takes writes again')
    await eventually(() => recovered().length > 0, { what: 'the recovery logged' })
    const lines = server.logs.slice(since)
    const errors = lines.filter(entry => entry.level >= 50)
    assert.ok(errors.length >= 1 && errors.length <= 2, `error lines: ${JSON.stringify(errors)}`)
    assert.ok(errors.every(entry => entry.msg === 'storage refuses writes' && entry.code === 'ENOSPC'), JSON.stringify(errors))
    const warnings = lines.filter(entry => entry.level === 40)
    assert.ok(warnings.length <= SESSIONS + 2, `warning lines: ${warnings.length}: ${JSON.stringify(warnings.map(entry => entry.msg))}`)
    assert.equal(recovered().length, 1)
  })
})
