import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { build } from '../client/build.js'
import { eventually } from './helpers/eventually.js'
import { contentOf, createSession, startServer } from './helpers/server.js'

const CHROMIUM = '/usr/bin/chromium'
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking']
const SCREENSHOT = fileURLToPath(new URL('../reports/screenshots/monaco-two-editors.png', import.meta.url))
const WAIT = { timeout: 20_000 }
const skip = !existsSync(CHROMIUM) && process.env.CI !== 'true' && `no Chromium at ${CHROMIUM}`

const ADA = { name: 'Ada', color: '#d33682' }
const BOB = { name: 'Bob', color: '#268bd2' }

/**
 * The text Monaco shows, line by line in order (Monaco renders spaces as no-break spaces).
 * @param {import('playwright-core').Page} page
 */
function monacoText (page) {
  return page.$$eval('.monaco-editor .view-line', lines => lines
    .map(line => ({ top: Number.parseFloat(/** @type {HTMLElement} */ (line).style.top), text: (line.textContent ?? '').replace(/\u00a0/g, ' ') }))
    .sort((a, b) => a.top - b.top).map(({ text }) => text).join('\n'))
}

describe('the Monaco page (y-monaco) in a real browser', { skip }, () => {
  /** @type {Awaited<ReturnType<typeof startServer>>} */
  let tandem
  /** @type {import('playwright-core').Browser} */
  let browser

  before(async () => {
    await build()
    tandem = await startServer()
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS })
  })
  after(async () => {
    await browser?.close()
    await tandem?.close()
  })

  it('lets two Monaco pages type at once; both end with the server\'s text and draw each other\'s caret', async (t) => {
    const { id } = await createSession(tandem.url, { name: 'notes.txt', content: 'shared line\n' })
    /** @type {string[]} */
    const errors = []
    const pages = await Promise.all([ADA, BOB].map(async (user) => {
      const context = await browser.newContext({ viewport: { width: 760, height: 420 } })
      await context.addInitScript(stored => localStorage.setItem('tandem:user', stored), JSON.stringify(user))
      const page = await context.newPage()
      page.on('pageerror', err => errors.push(err.message))
      page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()) })
      await page.goto(`${tandem.url}/s/${id}?editor=monaco`)
      await page.waitForSelector('#status[data-status="connected"]', WAIT)
      await page.waitForSelector('.monaco-editor .view-line', WAIT)
      return page
    }))
    const [ada, bob] = pages
    await ada.click('.monaco-editor .view-lines')
    await ada.keyboard.press('Control+Home')
    await bob.click('.monaco-editor .view-lines')
    await bob.keyboard.press('Control+End')
    await Promise.all([
      ada.keyboard.type('ada wrote this first\n', { delay: 15 }),
      bob.keyboard.type('bob added this last', { delay: 15 })
    ])
    const expected = 'ada wrote this first\nshared line\nbob added this last'
    await eventually(async () => {
      assert.equal(await contentOf(tandem.url, id), expected)
      assert.deepEqual(await Promise.all(pages.map(monacoText)), [expected, expected])
      return true
    }, { timeoutMs: WAIT.timeout, intervalMs: 50, what: 'both pages showing what the server stores' })

    for (const { viewer, other } of [{ viewer: ada, other: BOB }, { viewer: bob, other: ADA }]) {
      const caret = viewer.locator('.yRemoteSelectionHead')
      await caret.first().waitFor({ state: 'attached', ...WAIT })
      assert.equal(await caret.count(), 1, 'one remote caret')
      const color = await caret.first().evaluate(element => window.getComputedStyle(element).borderLeftColor)
      const [r, g, b] = [1, 3, 5].map(i => Number.parseInt(other.color.slice(i, i + 2), 16))
      assert.equal(color, `rgb(${r}, ${g}, ${b})`, 'drawn in the other editor\'s colour')
      assert.deepEqual(await viewer.locator('.presence li').allTextContents(), [viewer === ada ? 'Ada (you)' : 'Bob (you)', other.name])
    }
    assert.deepEqual(errors, [])

    await mkdir(fileURLToPath(new URL('.', `file://${SCREENSHOT}`)), { recursive: true })
    const shots = await Promise.all(pages.map(page => page.screenshot()))
    const sideBySide = await browser.newPage({ viewport: { width: 1540, height: 420 } })
    await sideBySide.setContent(`<body style="margin:0;display:flex;gap:20px;background:#888">${shots
      .map(png => `<img src="data:image/png;base64,${png.toString('base64')}">`).join('')}</body>`)
    await writeFile(SCREENSHOT, await sideBySide.screenshot())
    await sideBySide.close()
    for (const page of pages) await page.context().close()
    t.diagnostic(`screenshot: ${SCREENSHOT}`)
  })
})
