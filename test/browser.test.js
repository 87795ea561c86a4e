import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { build } from '../client/build.js'
import { startChildServer } from './helpers/child-server.js'
import { eventually } from './helpers/eventually.js'
import { hostRewritingProxy } from './helpers/proxy.js'
import { api, contentOf, createSession, tempDataDir } from './helpers/server.js'

const CHROMIUM = '/usr/bin/chromium'
const LAUNCH_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync']
const SCREENSHOT = fileURLToPath(new URL('../reports/screenshots/two-editors.png', import.meta.url))
const SCREENSHOTS = dirname(SCREENSHOT)
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const PHONE = { width: 390, height: 700 }
const WAIT = { timeout: 20_000 }
const run = promisify(execFile)

// Outside CI a machine without Chromium skips this suite; under CI it fails instead, so that a
// missing browser cannot pass for a green run.
const hasChromium = existsSync(CHROMIUM)
const skip = !hasChromium && process.env.CI !== 'true' &&
  `no Chromium at ${CHROMIUM}: install it (apt-get install -y chromium) to run the browser test`

// Names that would turn into markup if the page ever inserted them as HTML.
const ADA = { name: 'Ada <b>Lovelace</b>', color: '#d33682' }
const BOB = { name: 'Bob <img src=x onerror="document.title=1">', color: '#268bd2' }

/**
 * Fails unless nothing on the page is wider than its viewport (no sideways scrolling) and the
 * header's children all lie inside it.
 * @param {import('playwright-core').Page} page
 */
async function assertFitsWidth (page) {
  const { width, overflow } = await page.evaluate(() => ({
    width: window.innerWidth,
    overflow: [...document.querySelectorAll('.bar > *')]
      .map(element => ({ element: element.outerHTML.slice(0, 60), right: element.getBoundingClientRect().right }))
      .filter(({ right }) => right > window.innerWidth)
  }))
  assert.deepEqual(overflow, [], `header items past the ${width} px edge`)
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'the page scrolls sideways')
}

/** @param {import('playwright-core').Page} page @param {string} name */
async function screenshot (page, name) {
  await mkdir(SCREENSHOTS, { recursive: true })
  const path = `${SCREENSHOTS}/${name}.png`
  await writeFile(path, await page.screenshot())
  return path
}

/**
 * The editor's text as CodeMirror shows it, without the remote caret widgets (which carry names).
 * @param {import('playwright-core').Page} page
 */
function editorText (page) {
  return page.$$eval('.cm-content .cm-line', lines => lines.map((line) => {
    const copy = /** @type {HTMLElement} */ (line.cloneNode(true))
    for (const widget of copy.querySelectorAll('.cm-ySelectionCaret, .cm-widgetBuffer')) widget.remove()
    return copy.textContent
  }).join('\n'))
}

describe('the editor page in a real browser', { skip }, () => {
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let data
  /** @type {Awaited<ReturnType<typeof startChildServer>>} */
  let server
  /** @type {import('playwright-core').Browser} */
  let browser
  /** @type {{ page: import('playwright-core').Page, user: typeof ADA, errors: string[] }[]} */
  const editors = []
  /** @type {string} */
  let sessionId

  /** Resolves with the text once every page is connected and shows exactly what the server stores. */
  const converged = async () => {
    for (const { page } of editors) await page.waitForSelector('#status[data-status="connected"]', WAIT)
    let stored = ''
    // A failed comparison is kept as the last error, so a timeout shows how they disagree.
    await eventually(async () => {
      stored = await contentOf(server.url, sessionId)
      const shown = await Promise.all(editors.map(({ page }) => editorText(page)))
      assert.deepEqual(shown, editors.map(() => stored), 'pages and server disagree')
      return true
    }, { timeoutMs: WAIT.timeout, intervalMs: 50, what: 'pages showing what the server stores' })
    return stored
  }

  before(async () => {
    if (!hasChromium) throw new Error(`CI=true and no Chromium at ${CHROMIUM}: the browser test cannot run`)
    await build()
    data = await tempDataDir()
    server = await startChildServer({ DATA_DIR: data.dir })
    sessionId = (await createSession(server.url, { name: 'notes.txt', content: 'shared line\n' })).id
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS })
    for (const user of [ADA, BOB]) {
      // A context per editor: its own localStorage, so its own name and colour.
      const context = await browser.newContext({ viewport: { width: 760, height: 420 } })
      await context.addInitScript(stored => localStorage.setItem('tandem:user', stored), JSON.stringify(user))
      const page = await context.newPage()
      /** @type {string[]} */
      const errors = []
      page.on('pageerror', err => errors.push(err.message))
      page.on('console', (message) => {
        if (message.type() === 'error' && /Content Security Policy/.test(message.text())) errors.push(message.text())
      })
      editors.push({ page, user, errors })
    }
  })

  after(async () => {
    await browser?.close()
    await server?.stop('SIGTERM')
    await data?.remove()
  })

  it('lets two pages type at once; both end with the same text and see each other\'s cursor', async (t) => {
    await Promise.all(editors.map(({ page }) => page.goto(`${server.url}/s/${sessionId}`)))
    await converged()
    const [ada, bob] = editors
    await ada.page.click('.cm-content')
    await ada.page.keyboard.press('Control+Home')
    await bob.page.click('.cm-content')
    await bob.page.keyboard.press('Control+End')
    await Promise.all([
      ada.page.keyboard.type('ada wrote this first\n', { delay: 15 }),
      bob.page.keyboard.type('bob added this last', { delay: 15 })
    ])
    const text = await converged()
    assert.equal(text, 'ada wrote this first\nshared line\nbob added this last')

    for (const [viewer, other] of [[ada, bob], [bob, ada]]) {
      const label = viewer.page.locator('.cm-ySelectionCaret .cm-ySelectionInfo')
      await label.first().waitFor({ state: 'attached', ...WAIT })
      assert.deepEqual(await label.allTextContents(), [other.user.name], 'the other editor\'s caret, labelled as typed')
      assert.deepEqual(await viewer.page.locator('.presence li').allTextContents(), [`${viewer.user.name} (you)`, other.user.name])
    }
    assert.equal(await bob.page.locator('.presence img, h1 b').count(), 0, 'names are text, never markup')

    await mkdir(dirname(SCREENSHOT), { recursive: true })
    const shots = await Promise.all(editors.map(({ page }) => page.screenshot()))
    const sideBySide = await browser.newPage({ viewport: { width: 1540, height: 420 } })
    await sideBySide.setContent(`<body style="margin:0;display:flex;align-items:flex-start;gap:20px;background:#888">${shots
      .map(png => `<img src="data:image/png;base64,${png.toString('base64')}">`).join('')}</body>`)
    await writeFile(SCREENSHOT, await sideBySide.screenshot())
    await sideBySide.close()
    t.diagnostic(`screenshot: ${SCREENSHOT}`)
  })

  it('creates a session from a phone-sized page, infers its language from the name, and changes it', async (t) => {
    const page = await browser.newPage({ viewport: PHONE })
    try {
      await page.goto(`${server.url}/`)
      await page.fill('input[name="name"]', 'solver.py')
      await page.click('button[type="submit"]')
      await page.waitForSelector('#status[data-status="connected"]', WAIT)
      const id = new URL(page.url()).pathname.split('/').at(-1) ?? ''
      assert.equal(await page.inputValue('select.language'), 'python', 'inferred from .py')
      assert.equal((await api(server.url, `/api/sessions/${id}`)).body.language, 'python')
      await page.click('.cm-content')
      await page.keyboard.type('def solve(): pass')
      await assertFitsWidth(page)
      t.diagnostic(`screenshot: ${await screenshot(page, 'editor-390px')}`)

      await page.selectOption('select.language', 'rust')
      await eventually(async () => (await api(server.url, `/api/sessions/${id}`)).body.language === 'rust', { what: 'the language saved' })
      assert.equal(await page.locator('.notice').count(), 0)
    } finally {
      await page.close()
    }
  })

  it('gives each tab of one browser its own guest name, so a tab\'s cursor is not labelled as this one; a name typed in one is kept for the next', async () => {
    const { id } = await createSession(server.url, { name: 'tabs.txt', content: 'one line\n' })
    const context = await browser.newContext({ viewport: { width: 760, height: 420 } })
    try {
      const tabs = [await context.newPage(), await context.newPage()]
      for (const tab of tabs) {
        await tab.goto(`${server.url}/s/${id}`)
        await tab.waitForSelector('#status[data-status="connected"]', WAIT)
      }
      const names = await Promise.all(tabs.map(tab => tab.inputValue('#your-name')))
      for (const name of names) assert.match(name, /^Guest \d{4}$/)
      assert.notEqual(names[0], names[1], 'two tabs, two guests')

      const [first, second] = tabs
      await first.click('.cm-content')
      const label = second.locator('.cm-ySelectionCaret .cm-ySelectionInfo')
      await label.first().waitFor({ state: 'attached', ...WAIT })
      assert.deepEqual(await label.allTextContents(), [names[0]], 'the other tab\'s caret carries its own name')

      await second.reload()
      await second.waitForSelector('#status[data-status="connected"]', WAIT)
      assert.equal(await second.inputValue('#your-name'), names[1], 'a reload keeps the tab\'s guest')

      await first.fill('#your-name', 'Grace')
      await first.press('#your-name', 'Enter')
      const third = await context.newPage()
      await third.goto(`${server.url}/s/${id}`)
      await third.waitForSelector('#status[data-status="connected"]', WAIT)
      assert.equal(await third.inputValue('#your-name'), 'Grace', 'a chosen name is kept for later tabs')
    } finally {
      await context.close()
    }
  })

  it('keeps the text across a reload', async () => {
    const [ada, bob] = editors
    const kept = await converged()
    await ada.page.reload()
    assert.equal(await converged(), kept)
    // The page that went away took its presence along; the reloaded one is back, once.
    await bob.page.waitForFunction(() => document.querySelectorAll('.presence li').length === 2, undefined, WAIT)
    assert.deepEqual(await bob.page.locator('.presence li').allTextContents(), [`${bob.user.name} (you)`, ada.user.name])
  })

  it('reconnects and resyncs after the server restarts, losing nothing typed', async () => {
    const [ada, bob] = editors
    const { port } = new URL(server.url)
    await server.stop('SIGTERM')
    await Promise.all(editors.map(({ page }) => page.waitForSelector('#status[data-status="connecting"]', WAIT)))

    // Typed while the server is down: kept in the page, sent once it is back.
    await ada.page.click('.cm-content')
    await ada.page.keyboard.press('Control+End')
    await ada.page.keyboard.type('\ntyped while the server was down', { delay: 5 })
    await ada.page.waitForFunction(() => /unsaved/.test(document.getElementById('status')?.textContent ?? ''), undefined, WAIT)

    server = await startChildServer({ DATA_DIR: data.dir, PORT: port })
    const text = await converged()
    assert.equal(text, 'ada wrote this first\nshared line\nbob added this last\ntyped while the server was down')
    await bob.page.click('.cm-content')
    await bob.page.keyboard.press('Control+End')
    await bob.page.keyboard.type('!')
    assert.match(await converged(), /down!$/)
    for (const { errors } of editors) assert.deepEqual(errors, [])
  })
})

describe('the editor page with auth on, in a real browser', { skip }, () => {
  const API_KEY = 'browser-test-api-key-01'
  const KEY = { authorization: `Bearer ${API_KEY}` }
  /** @type {Awaited<ReturnType<typeof tempDataDir>>} */
  let data
  /** @type {Awaited<ReturnType<typeof startChildServer>>} */
  let server
  /** @type {import('playwright-core').Browser} */
  let browser
  /** @type {{ id: string }} */
  let session

  before(async () => {
    if (!hasChromium) throw new Error(`CI=true and no Chromium at ${CHROMIUM}: the browser test cannot run`)
    await build()
    data = await tempDataDir()
    server = await startChildServer({ DATA_DIR: data.dir, AUTH_SECRET: 'browser-test-secret-of-32-characters!', API_KEY })
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS })
    session = (await api(server.url, '/api/sessions', { method: 'POST', body: { name: 'exam.py', content: 'print(1)\n' }, headers: KEY })).body
  })

  after(async () => {
    await browser?.close()
    await server?.stop('SIGTERM')
    await data?.remove()
  })

  /** An invite link, minted as an operator does: npm, the script, the env it documents. @param {string} user @param {string} role */
  const link = async (user, role) => {
    const { stdout } = await run('npm', ['run', '--silent', 'invite', '--', session.id, user, role], {
      cwd: ROOT, env: { ...process.env, API_KEY, TANDEM_URL: server.url }, timeout: 20_000
    })
    return stdout.trim()
  }

  it('opens invite links minted with npm run invite; a viewer sees every edit under its own name, cannot type, and is told of no refusal', async (t) => {
    const editorLink = await link('ada', 'editor')
    assert.match(editorLink, new RegExp(`^${server.url}/s/${session.id}#token=[\\w-]+\\.[\\w-]+\\.[\\w-]+$`))
    const [editor, viewer] = [await browser.newPage(), await browser.newPage()]
    await editor.goto(editorLink)
    await viewer.goto(await link('bob', 'viewer'))
    for (const page of [editor, viewer]) await page.waitForSelector('#status[data-status="connected"]', WAIT)
    assert.equal(await editor.inputValue('#your-name'), 'ada', 'the name the token gives, not a guest name')
    assert.equal(await viewer.inputValue('#your-name'), 'bob')

    await editor.click('.cm-content')
    await editor.keyboard.press('Control+End')
    await editor.keyboard.type('print(2)', { delay: 10 })
    await viewer.waitForFunction(() => document.querySelector('.cm-content')?.textContent?.includes('print(2)'), null, WAIT)
    assert.equal(await viewer.getAttribute('.cm-content', 'contenteditable'), 'false')
    await viewer.click('.cm-content')
    await viewer.keyboard.type('vandal')
    const stored = await api(server.url, `/api/sessions/${session.id}/content`, { headers: KEY })
    assert.equal(stored.body, 'print(1)\nprint(2)')
    await editor.waitForFunction(() => [...document.querySelectorAll('.presence li')].map(li => li.textContent).join() === 'ada (you),bob', null, WAIT)
    const notices = await viewer.locator('.notice').allTextContents()
    assert.deepEqual(notices, ['You are a viewer: you see every edit, and yours are not sent.'], 'no refusal shown to a viewer who typed nothing')
    await Promise.all([editor.close(), viewer.close()])

    // The home page cannot list or create without the API key: it explains invite links instead.
    const home = await browser.newPage({ viewport: PHONE })
    await home.goto(`${server.url}/`)
    await home.waitForSelector('main.invite-only', WAIT)
    assert.match(await home.textContent('main') ?? '', /npm run invite -- <session id> <user> editor/)
    assert.equal(await home.locator('form.create input[name="name"]').count(), 0, 'no create form that would fail')
    await assertFitsWidth(home)
    t.diagnostic(`screenshot: ${await screenshot(home, 'home-auth-on-390px')}`)
    await home.fill('input[name="invite"]', editorLink)
    await home.click('button[type="submit"]')
    await home.waitForSelector('#status[data-status="connected"]', WAIT)
    await assertFitsWidth(home)
    t.diagnostic(`screenshot: ${await screenshot(home, 'editor-invited-390px')}`)
    await home.close()

    // Without a token the page cannot even read the session.
    const stranger = await browser.newPage()
    await stranger.goto(`${server.url}/s/${session.id}`)
    await stranger.waitForSelector('main.missing', WAIT)
    await stranger.close()
  })

  it('takes the token out of the address bar once read, keeps it for reloads of the tab, and not for another tab', async () => {
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      await page.goto(await link('carol', 'editor'))
      await page.waitForSelector('#status[data-status="connected"]', WAIT)
      const address = `${server.url}/s/${session.id}`
      assert.equal(page.url(), address, 'a copied address carries no token')
      assert.equal(await page.inputValue('#your-name'), 'carol')

      await page.reload()
      await page.waitForSelector('#status[data-status="connected"]', WAIT)
      assert.equal(await page.inputValue('#your-name'), 'carol', 'the reload joined with the token')
      assert.equal(page.url(), address)

      // The same browser, another tab, the copied address: no identity comes with it.
      const tab = await context.newPage()
      await tab.goto(address)
      await tab.waitForSelector('main.missing', WAIT)
    } finally {
      await context.close()
    }
  })
})

describe('the editor page and CORS_ORIGIN, in a real browser', { skip }, () => {
  /** @type {import('playwright-core').Browser} */
  let browser

  before(async () => {
    if (!hasChromium) throw new Error(`CI=true and no Chromium at ${CHROMIUM}: the browser test cannot run`)
    await build()
    browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS })
  })
  after(() => browser?.close())

  it('connects from the server\'s own page when CORS_ORIGIN lists only a dev server', async (t) => {
    const data = await tempDataDir()
    const server = await startChildServer({ DATA_DIR: data.dir, CORS_ORIGIN: 'http://localhost:5173' })
    t.after(async () => { await server.stop('SIGTERM'); await data.remove() })
    const { id } = await createSession(server.url, { name: 'own-origin.txt' })
    const page = await browser.newPage()
    t.after(() => page.close())
    await page.goto(`${server.url}/s/${id}`)
    await page.waitForSelector('#status[data-status="connected"]', WAIT)
    assert.equal(await page.locator('.notice').count(), 0)
  })

  it('shows why it cannot connect when the server takes its origin for another one', async (t) => {
    const data = await tempDataDir()
    const server = await startChildServer({ DATA_DIR: data.dir, CORS_ORIGIN: 'http://localhost:5173' })
    t.after(async () => { await server.stop('SIGTERM'); await data.remove() })
    const { id } = await createSession(server.url, { name: 'proxied.txt' })
    // The page comes through a proxy that does not pass its Host on: to the server, the page's
    // origin is another site's, which CORS_ORIGIN does not list. (With `same-origin` not even the
    // page's script would load: a browser sends an Origin for a module script.)
    const proxy = await hostRewritingProxy(server.url)
    t.after(() => proxy.close())
    const page = await browser.newPage()
    t.after(() => page.close())
    await page.goto(`${proxy.url}/s/${id}`)
    const notice = page.locator('.notice', { hasText: 'Cannot connect' })
    await notice.waitFor(WAIT)
    assert.equal(await notice.textContent(),
      `Cannot connect: the origin ${proxy.url} is not allowed: add it to CORS_ORIGIN (comma-separated) to let its pages connect (FORBIDDEN).`)
    assert.equal(await page.getAttribute('#status', 'data-status'), 'disconnected')
  })
})
