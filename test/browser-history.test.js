import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { build } from '../client/build.js'
import { colorOfName } from '../client/src/page/user.js'
import { startChildServer } from './helpers/child-server.js'
import { eventually } from './helpers/eventually.js'
import { api, contentOf, createSession, tempDataDir } from './helpers/server.js'

const CHROMIUM = '/usr/bin/chromium'
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']
const SCREENSHOTS = fileURLToPath(new URL('../reports/screenshots/', import.meta.url))
const WAIT = { timeout: 20_000 }

// Outside CI a machine without Chromium skips this suite; under CI it fails instead.
const hasChromium = existsSync(CHROMIUM)
const skip = !hasChromium && process.env.CI !== 'true' &&
  `no Chromium at ${CHROMIUM}: install it (apt-get install -y chromium) to run the browser test`

const ADA = { name: 'Ada <b>Lovelace</b>', color: '#d33682' }
const BOB = { name: 'Bob', color: '#268bd2' }

/** The text CodeMirror shows, without remote carets' name labels. @param {import('playwright-core').Page} page */
const shownText = page => page.$$eval('.cm-content .cm-line', lines => lines.map((line) => {
  const copy = /** @type {HTMLElement} */ (line.cloneNode(true))
  for (const widget of copy.querySelectorAll('.cm-ySelectionCaret, .cm-widgetBuffer')) widget.remove()
  return copy.textContent
}).join('\n'))

/** Moves the timeline as a user dragging it would. @param {import('playwright-core').Page} page @param {number} index */
const moveTo = (page, index) => page.$eval('.timeline', (slider, value) => {
  /** @type {HTMLInputElement} */ (slider).value = String(value)
  slider.dispatchEvent(new Event('input', { bubbles: true }))
}, index)

/**
 * The share of a screenshot's pixels inside `box` that have `color` at the page's tint (a fifth of
 * it over white), read back from the PNG in a browser canvas.
 * @param {import('playwright-core').Browser} browser @param {Buffer} png
 * @param {{ x: number, y: number, width: number, height: number }} box @param {string} color `#rrggbb`
 */
async function tintedShare (browser, png, box, color) {
  const page = await browser.newPage()
  try {
    await page.setContent('<canvas></canvas>')
    return await page.evaluate(async ({ data, box, color }) => {
      const image = new window.Image()
      image.src = `data:image/png;base64,${data}`
      await image.decode()
      const canvas = /** @type {HTMLCanvasElement} */ (document.querySelector('canvas'))
      canvas.width = image.width
      canvas.height = image.height
      const context = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'))
      context.drawImage(image, 0, 0)
      const pixels = context.getImageData(Math.round(box.x), Math.round(box.y), Math.round(box.width), Math.round(box.height)).data
      const tint = [1, 3, 5].map(i => Math.round(parseInt(color.slice(i, i + 2), 16) * 0.2 + 255 * 0.8))
      let tinted = 0
      for (let i = 0; i < pixels.length; i += 4) {
        if (tint.every((value, c) => Math.abs(pixels[i + c] - value) <= 10)) tinted++
      }
      return tinted / (pixels.length / 4)
    }, { data: png.toString('base64'), box, color })
  } finally {
    await page.close()
  }
}

describe('the history page in a real browser', { skip }, () => {
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let data
  /** @type {Awaited<ReturnType<typeof startChildServer>>} */
  let server
  /** @type {import('playwright-core').Browser} */
  let browser

  before(async () => {
    if (!hasChromium) throw new Error(`CI=true and no Chromium at ${CHROMIUM}: the browser test cannot run`)
    await build()
    data = await tempDataDir()
    server = await startChildServer({ DATA_DIR: data.dir, HISTORY_RETENTION: '1d' })
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS })
  })

  after(async () => {
    await browser?.close()
    await server?.stop('SIGTERM')
    await data?.remove()
  })

  it('plays two editors\' typing back keystroke by keystroke with who typed what, and restores an earlier text for everyone', async (t) => {
    const { id } = await createSession(server.url, { name: 'notes.txt', content: 'shared line\n' })
    /** @type {import('playwright-core').Page[]} */
    const editors = []
    for (const user of [ADA, BOB]) {
      const context = await browser.newContext({ viewport: { width: 760, height: 420 } })
      await context.addInitScript(stored => localStorage.setItem('tandem:user', stored), JSON.stringify(user))
      const page = await context.newPage()
      await page.goto(`${server.url}/s/${id}`)
      await page.waitForSelector('#status[data-status="connected"]', WAIT)
      editors.push(page)
    }
    const [ada, bob] = editors
    await ada.click('.cm-content')
    await ada.keyboard.press('Control+Home')
    await ada.keyboard.type('ada wrote this\n', { delay: 20 })
    await bob.click('.cm-content')
    await bob.keyboard.press('Control+End')
    await bob.keyboard.type('bob added this', { delay: 20 })
    const final = 'ada wrote this\nshared line\nbob added this'
    await eventually(async () => await contentOf(server.url, id) === final, { what: 'both editors\' typing stored' })

    const page = await browser.newPage({ viewport: { width: 900, height: 480 } })
    /** @type {string[]} */
    const errors = []
    page.on('pageerror', err => errors.push(err.message))
    await page.goto(`${server.url}/s/${id}/history`)
    await page.waitForSelector('.timeline', WAIT)
    const steps = Number(await page.getAttribute('.timeline', 'max'))
    assert.ok(steps >= 'ada wrote this\nbob added this'.length, `${steps} steps for every keystroke`)
    assert.equal(await shownText(page), final, 'opens at the end')
    // The text the session was created with has no editor's name.
    assert.deepEqual((await page.locator('.authors li').allTextContents()).map(text => text.replace(/ \d+$/, '')).sort(), [ADA.name, BOB.name, 'unknown'].sort())
    assert.equal(await page.locator('.authors b').count(), 0, 'names are text, never markup')

    await moveTo(page, 0)
    const start = await shownText(page)
    assert.ok(!start.includes('ada') && !start.includes('bob'), `before anyone typed: ${JSON.stringify(start)}`)
    await page.selectOption('.speed', '20')
    await page.click('.play')
    await eventually(async () => await shownText(page) === final && await page.textContent('.play') === 'Play', { timeoutMs: WAIT.timeout, what: 'the playback reaching the end' })
    assert.equal(await page.inputValue('.timeline'), String(steps))

    const png = await page.screenshot()
    await mkdir(SCREENSHOTS, { recursive: true })
    await writeFile(`${SCREENSHOTS}history.png`, png)
    t.diagnostic(`screenshot: ${SCREENSHOTS}history.png`)
    for (const user of [ADA, BOB]) {
      const box = await page.locator(`.cm-content [title="${user.name}"]`).last().boundingBox()
      assert.ok(box, `${user.name}'s text is marked`)
      const share = await tintedShare(browser, png, box, colorOfName(user.name))
      assert.ok(share > 0.3, `${user.name}'s text shows in their tint on ${(share * 100).toFixed(0)} % of its pixels`)
    }

    // Back to the moment Ada had typed her line and Bob nothing yet, then restored for everyone.
    let index = steps
    while (!(await shownText(page)).endsWith('shared line\n') || (await shownText(page)).includes('bob')) {
      index--
      await moveTo(page, index)
    }
    const earlier = await shownText(page)
    assert.equal(earlier, 'ada wrote this\nshared line\n')
    await page.click('.restore')
    await page.waitForSelector('.notice', WAIT)
    assert.match(await page.textContent('.notice') ?? '', /is back/)
    await eventually(async () => await contentOf(server.url, id) === earlier, { what: 'the restored text stored' })
    for (const editor of editors) {
      await eventually(async () => await shownText(editor) === earlier, { what: 'the restored text in an editor' })
    }
    const later = await api(server.url, `/api/sessions/${id}/content?at=${new Date().toISOString()}`)
    assert.equal(later.body, earlier)
    assert.deepEqual(errors, [])
    await page.close()
    for (const editor of editors) await editor.context().close()
  })
})
