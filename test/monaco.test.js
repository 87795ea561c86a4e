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
const SCREENSHOTS = fileURLToPath(new URL('../reports/screenshots/', import.meta.url))
const WAIT = { timeout: 20_000 }
const skip = !existsSync(CHROMIUM) && process.env.CI !== 'true' && `no Chromium at ${CHROMIUM}`

const ADA = { name: 'Ada', color: '#d33682' }
const BOB = { name: 'Bob', color: '#268bd2' }
// Names that would turn into markup if a caret label ever inserted them as HTML.
const CAROL = { name: 'Carol <b>Lovelace</b>', color: '#2aa198' }
const DAN = { name: 'Dan <img src=x onerror="document.title=1">', color: '#b58900' }

/** `#rrggbb` as the browser computes it. @param {string} hex */
const rgb = hex => `rgb(${[1, 3, 5].map(i => Number.parseInt(hex.slice(i, i + 2), 16)).join(', ')})`

/**
 * Opens `url` in a browser context of its own (its own localStorage, so its own name and colour),
 * once the page is connected and shows `ready`. Page errors and console errors go to `errors`.
 * @param {import('playwright-core').Browser} browser
 * @param {{ name: string, color: string }} user @param {string} url @param {string} ready @param {string[]} errors
 */
async function openAs (browser, user, url, ready, errors) {
  const context = await browser.newContext({ viewport: { width: 760, height: 420 } })
  await context.addInitScript(stored => localStorage.setItem('tandem:user', stored), JSON.stringify(user))
  const page = await context.newPage()
  page.on('pageerror', err => errors.push(err.message))
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()) })
  await page.goto(url)
  await page.waitForSelector('#status[data-status="connected"]', WAIT)
  await page.waitForSelector(ready, WAIT)
  return page
}

/**
 * Writes the pages' screenshots side by side into reports/screenshots/`name`.png.
 * @param {import('playwright-core').Browser} browser @param {import('playwright-core').Page[]} pages @param {string} name
 */
async function screenshotSideBySide (browser, pages, name) {
  await mkdir(SCREENSHOTS, { recursive: true })
  const shots = await Promise.all(pages.map(page => page.screenshot()))
  const sideBySide = await browser.newPage({ viewport: { width: 1540, height: 420 } })
  await sideBySide.setContent(`<body style="margin:0;display:flex;align-items:flex-start;gap:20px;background:#888">${shots
    .map(png => `<img src="data:image/png;base64,${png.toString('base64')}">`).join('')}</body>`)
  const path = `${SCREENSHOTS}${name}.png`
  await writeFile(path, await sideBySide.screenshot())
  await sideBySide.close()
  return path
}

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
    const pages = await Promise.all([ADA, BOB].map(user => openAs(browser, user, `${tandem.url}/s/${id}?editor=monaco`, '.monaco-editor .view-line', errors)))
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
      assert.equal(color, rgb(other.color), 'drawn in the other editor\'s colour')
      assert.deepEqual(await viewer.locator('.remote-name').allTextContents(), [other.name], 'labelled with the other\'s name')
      assert.deepEqual(await viewer.locator('.presence li').allTextContents(), [viewer === ada ? 'Ada (you)' : 'Bob (you)', other.name])
    }
    assert.deepEqual(errors, [])

    t.diagnostic(`screenshot: ${await screenshotSideBySide(browser, pages, 'monaco-two-editors')}`)
    for (const page of pages) await page.context().close()
  })

  it('shows a CodeMirror page\'s and a Monaco page\'s carets on both, each labelled with the other\'s name, and colours Monaco in the session\'s language', async (t) => {
    const { id } = await createSession(tandem.url, { name: 'main.rs', content: 'fn main() {\n    println!("hi");\n}\n' })
    /** @type {string[]} */
    const errors = []
    const codemirror = await openAs(browser, CAROL, `${tandem.url}/s/${id}`, '.cm-content .cm-line', errors)
    const monaco = await openAs(browser, DAN, `${tandem.url}/s/${id}?editor=monaco`, '.monaco-editor .view-line', errors)

    assert.equal(await monaco.getAttribute('.editor.monaco[data-mode-id]', 'data-mode-id'), 'rust', 'the model is in the session\'s language')
    // Rust's grammar, a chunk of its own, has loaded: the keyword is coloured unlike the name after it.
    await monaco.waitForFunction(() => {
      const tokens = [...document.querySelectorAll('.monaco-editor .view-line span span')]
      const classOf = (/** @type {string} */ word) => tokens.find(token => token.textContent?.trim() === word)?.className
      return classOf('fn') !== undefined && classOf('main') !== undefined && classOf('fn') !== classOf('main')
    }, undefined, WAIT)

    // Carol's caret after the closing brace (line 3), Dan's at the end of the println! line (line 2).
    await codemirror.click('.cm-content')
    for (const key of ['Control+Home', 'ArrowDown', 'ArrowDown', 'End']) await codemirror.keyboard.press(key)
    await monaco.click('.monaco-editor .view-lines')
    for (const key of ['Control+Home', 'ArrowDown', 'End']) await monaco.keyboard.press(key)

    // On the CodeMirror page: Dan's caret, in his colour, after the text of line 2, labelled as typed.
    const cmCaret = codemirror.locator('.cm-ySelectionCaret')
    await eventually(async () => {
      assert.equal(await cmCaret.count(), 1, 'one remote caret')
      assert.equal(await cmCaret.evaluate((caret) => {
        const before = document.createRange()
        before.setStart(/** @type {Element} */ (caret.closest('.cm-line')), 0)
        before.setEndBefore(caret)
        return before.toString()
      }), '    println!("hi");', 'the caret where Dan put his')
      return true
    }, { timeoutMs: WAIT.timeout, intervalMs: 50, what: 'Dan\'s caret on the CodeMirror page' })
    assert.equal(await cmCaret.evaluate(caret => window.getComputedStyle(caret).borderLeftColor), rgb(DAN.color))
    assert.deepEqual(await codemirror.locator('.cm-ySelectionCaret .cm-ySelectionInfo').allTextContents(), [DAN.name])

    // On the Monaco page: Carol's caret, in her colour, after the brace of line 3, her name on a label above it.
    const monacoCaret = monaco.locator('.yRemoteSelectionHead')
    await eventually(async () => {
      assert.equal(await monacoCaret.count(), 1, 'one remote caret')
      assert.equal(await monacoCaret.evaluate((caret) => {
        const before = document.createRange()
        before.setStart(/** @type {Element} */ (caret.closest('.view-line')), 0)
        before.setEndBefore(caret)
        return before.toString()
      }), '}', 'the caret where Carol put hers')
      return true
    }, { timeoutMs: WAIT.timeout, intervalMs: 50, what: 'Carol\'s caret on the Monaco page' })
    assert.equal(await monacoCaret.evaluate(caret => window.getComputedStyle(caret).borderLeftColor), rgb(CAROL.color))
    const label = monaco.locator('.remote-name')
    assert.deepEqual(await label.allTextContents(), [CAROL.name])
    assert.equal(await label.evaluate(element => window.getComputedStyle(element).backgroundColor), rgb(CAROL.color))
    const [caretBox, labelBox] = await Promise.all([monacoCaret.boundingBox(), label.boundingBox()])
    assert.ok(caretBox && labelBox && Math.abs(labelBox.x - caretBox.x) < 4 && labelBox.y + labelBox.height <= caretBox.y + 1,
      `the label just above the caret: caret ${JSON.stringify(caretBox)}, label ${JSON.stringify(labelBox)}`)

    assert.equal(await codemirror.locator('.cm-ySelectionInfo *, .presence img, .presence b').count(), 0, 'names are text, never markup')
    assert.equal(await monaco.locator('.remote-name *, .presence img, .presence b').count(), 0, 'names are text, never markup')
    assert.deepEqual(errors, [])
    t.diagnostic(`screenshot: ${await screenshotSideBySide(browser, [codemirror, monaco], 'codemirror-and-monaco')}`)
    for (const page of [codemirror, monaco]) await page.context().close()
  })
})
