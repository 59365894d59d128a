/**
 * Real headless Chromium for the browser tests: Debian's `chromium`
 * (`apt-get install -y chromium`; CONCORD_CHROMIUM names another binary),
 * driven by puppeteer-core, which downloads nothing. Each launch uses the
 * profile folder it is given, so IndexedDB persists across launches that
 * share one. Pages are served from 127.0.0.1 by {@link servePage}: the
 * bundle, its HTML and Automerge's wasm; nothing else is reachable.
 */
import { accessSync, constants, readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'
import { ROOT } from './browser-bundle.ts'

const CANDIDATES = ['/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome-stable', '/usr/bin/google-chrome']

/** The Chromium binary to drive, or undefined when none is installed. */
export function findChromium(): string | undefined {
  const wanted = process.env.CONCORD_CHROMIUM
  for (const path of wanted ? [wanted] : CANDIDATES) {
    try {
      accessSync(path, constants.X_OK)
      return path
    } catch {
      // not there
    }
  }
  return undefined
}

/** Why the browser tests skip, or undefined when they can run. */
export function browserSkipReason(): string | undefined {
  if (findChromium() !== undefined) return undefined
  return 'no Chromium found (apt-get install -y chromium, or set CONCORD_CHROMIUM): the browser tests need a real browser'
}

/** Launches headless Chromium on the profile folder `userDataDir`. */
export async function launchChromium(userDataDir: string): Promise<Browser> {
  const executablePath = findChromium()
  if (!executablePath) throw new Error(browserSkipReason())
  return puppeteer.launch({
    executablePath,
    headless: true,
    pipe: true,
    userDataDir,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  })
}

/** What a page said on its console, and what it threw. */
export interface PageLog {
  readonly errors: string[]
  readonly lines: string[]
}

/** Opens `url` in a new page of `browser`, recording its console errors and uncaught exceptions into `log`. */
export async function openPage(browser: Browser, url: string, log: PageLog): Promise<Page> {
  const page = await browser.newPage()
  page.on('console', (message) => {
    const text = `${message.type()}: ${message.text()}`
    log.lines.push(text)
    if (message.type() === 'error' || message.type() === 'warn') log.errors.push(text)
  })
  page.on('pageerror', (error) => log.errors.push(`pageerror: ${(error as Error)?.stack ?? String(error)}`))
  page.on('requestfailed', (request) => log.errors.push(`requestfailed: ${request.url()} ${request.failure()?.errorText ?? ''}`))
  // tsx compiles the tests with esbuild's keepNames: functions given to page.evaluate may call its __name helper.
  await page.evaluateOnNewDocument('globalThis.__name = (target) => target')
  await page.goto(url, { waitUntil: 'load' })
  await page.waitForFunction('window.Concord !== undefined', { timeout: 15_000 })
  return page
}

/** An HTTP server on 127.0.0.1 serving one page: `/` (HTML), `/app.js` (the bundle), `/automerge.wasm`. */
export interface PageServer {
  readonly url: string
  /** Requests served, by path (a test can check nothing else was asked for). */
  readonly requests: string[]
  close(): Promise<void>
}

const HTML =
  '<!doctype html><meta charset="utf-8"><title>concord browser test</title><link rel="icon" href="data:,">' +
  '<script type="module">import * as Concord from "/app.js"; window.Concord = Concord</script>'

/** Serves the page bundle `code` (and Automerge's wasm from node_modules) on 127.0.0.1, port `port` (0: any). */
export async function servePage(code: Uint8Array, port = 0): Promise<PageServer> {
  const wasm = readFileSync(join(ROOT, 'node_modules/@automerge/automerge/dist/automerge.wasm'))
  const requests: string[] = []
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? '/', 'http://127.0.0.1').pathname
    requests.push(path)
    if (path === '/') response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(HTML)
    else if (path === '/app.js') response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-store' }).end(code)
    else if (path === '/automerge.wasm') response.writeHead(200, { 'content-type': 'application/wasm' }).end(wasm)
    else response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n')
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  const { port: bound } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${bound}/`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
