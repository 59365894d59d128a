/**
 * The inspector (`listen({ ui: true })`) in real headless Chromium: a hub
 * (LevelDB folder) serves `/ui`, two peers (ana, bob) edit it; the page,
 * with a read-only token, lists the names, shows the values live as they
 * commit, the timeline of each agent's records, blame by agent, the peers
 * and the durability; its own peer cannot write (the hub refuses it), and
 * a token without access to a name never sees it (neither the page nor the
 * API). No console error, and no request beyond the serving peer.
 * Screenshots go to test-output/ (gitignored). Skipped, saying why,
 * without Chromium.
 */
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Browser, Page } from 'puppeteer-core'
import { createPeer, type Peer } from '../../peer/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'
import { ROOT } from './browser-bundle.ts'
import { browserSkipReason, launchChromium } from './chromium.ts'

/** The page's document, inside `page.waitForFunction` callbacks (they run in the page). */
declare const document: any

const skip = browserSkipReason()
if (skip) console.log(`# SKIP test/browser/inspector: ${skip}`)

const SECRETS = { ana: 'ana-secret', bob: 'bob-secret', viewer: 'viewer-secret', outsider: 'outsider-secret' }
const OUTPUT = join(ROOT, 'test-output')

let dir: { path: string; remove: () => Promise<void> }
let hub: Peer
let ana: Peer
let bob: Peer
let browser: Browser | undefined
let origin = ''
let wsUrl = ''
const errors: string[] = []
const foreign: string[] = []

async function openInspector(peer: string, token: string): Promise<Page> {
  const page = await browser!.newPage()
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warn') errors.push(`${peer}: ${message.type()}: ${message.text()}`)
  })
  page.on('pageerror', (error) => errors.push(`${peer}: pageerror: ${(error as Error)?.stack ?? String(error)}`))
  page.on('requestfailed', (request) => errors.push(`${peer}: requestfailed: ${request.url()}`))
  page.on('request', (request) => {
    const url = request.url()
    if (!url.startsWith(`${origin}/`) && !url.startsWith(wsUrl.replace(/\/concord$/, '/')) && !url.startsWith('data:')) foreign.push(url)
  })
  await page.setViewport({ width: 1400, height: 1100 })
  await page.goto(`${origin}/ui#peer=${peer}&token=${token}`, { waitUntil: 'load' })
  await page.waitForSelector('#connection.ok', { timeout: 15_000 })
  return page
}

/**
 * Clicks the element `selector` names, found and clicked in one step in the
 * page: the page re-renders its lists as commits and polls come, so a
 * handle taken before the click may be detached by then.
 */
async function clickOn(page: Page, selector: string): Promise<void> {
  await page.waitForSelector(selector, { timeout: 15_000 })
  await page.$eval(selector, (el) => (el as any).click())
}

const text = (page: Page, selector: string) => page.$eval(selector, (el) => el.textContent ?? '')
const count = (page: Page, selector: string) => page.$$eval(selector, (els) => els.length)

before(async () => {
  if (skip) return
  dir = await tempDir('concord-inspector-')
  hub = await createPeer({
    agentId: 'hub',
    dir: join(dir.path, 'hub'),
    auth: { accept: SECRETS },
    access: (peer, name) => {
      if (peer === 'ana' || peer === 'bob') return 'write'
      if (peer === 'outsider') return name.startsWith('secret/') ? 'none' : 'read'
      return 'read'
    },
  })
  const listening = await hub.listen({ ui: true })
  wsUrl = listening.url
  origin = `http://127.0.0.1:${listening.port}`
  ana = await createPeer({ agentId: 'ana', dir: join(dir.path, 'ana'), auth: { token: SECRETS.ana } })
  bob = await createPeer({ agentId: 'bob', dir: join(dir.path, 'bob'), auth: { token: SECRETS.bob } })
  await ana.connect(wsUrl)
  await bob.connect(wsUrl)
  const anaNotes = await ana.yjs('notes')
  anaNotes.doc.getText('t').insert(0, 'Ana drafts the plan. ')
  ;(await ana.counter('clicks')).increment(2)
  ;(await ana.register('secret/salary')).set({ amount: 100 })
  await ana.flush({ acks: 1 })
  await until(async () => (await hub.yjs('notes')).doc.getText('t').toString().length > 0, 'ana -> hub')
  await until(async () => (await bob.yjs('notes')).doc.getText('t').toString().length > 0, 'hub -> bob')
  const bobNotes = await bob.yjs('notes')
  const t = bobNotes.doc.getText('t')
  await bob.transact(() => t.insert(t.length, 'Bob adds the budget.'), { message: 'the budget, as agreed' })
  ;(await bob.counter('clicks')).increment(3)
  ;(await bob.set<string>('tags')).add('urgent')
  await bob.flush({ acks: 1 })
  ana.presence.set('ana', { status: 'drafting the plan', name: 'notes', ttlMs: 300_000 })
  bob.presence.set('bob', { status: 'reviewing pay', name: 'secret/salary', ttlMs: 300_000 })
  await until(() => hub.presence.list().length === 2, 'presence reaches the hub')
  await mkdir(OUTPUT, { recursive: true })
  browser = await launchChromium(join(dir.path, 'profile'))
})

after(async () => {
  if (skip) return
  await browser?.close()
  await Promise.allSettled([ana?.close(), bob?.close()])
  await hub?.close()
  await dir?.remove()
})

test('inspector: the page lists the names, shows values live, the timeline of each agent, blame, peers and durability', { skip }, async () => {
  const page = await openInspector('viewer', SECRETS.viewer)
  await page.waitForFunction(() => ['notes', 'clicks', 'tags', 'secret/salary'].every((n) => document.querySelector(`#names li[data-name="${n}"]`)), {
    timeout: 15_000,
  })
  assert.match(await text(page, '#names li[data-name="notes"] .meta'), /yjs .* by bob “the budget, as agreed”/, 'who and why of the last change')

  await clickOn(page, '#names li[data-name="notes"]')
  await page.waitForFunction(() => /Bob adds the budget/.test(document.querySelector('#value')?.textContent ?? ''), { timeout: 15_000 })
  assert.match(await text(page, '#value'), /Ana drafts the plan\. Bob adds the budget\./)
  // The timeline has each agent's records, the chart a lane each; blame colours each agent's text.
  await page.waitForSelector('#timeline tbody tr[data-agent="bob"]', { timeout: 15_000 })
  assert.match(await text(page, '#timeline tbody tr[data-agent="bob"]'), /the budget, as agreed/, "the timeline shows why bob's record was made")
  assert.ok((await count(page, '#timeline tbody tr[data-agent="ana"]')) >= 1)
  assert.ok((await count(page, '#timeline-chart circle[data-seq]')) >= 2)
  await page.waitForSelector('#blame-text span[data-agent="bob"]', { timeout: 15_000 })
  assert.match(await text(page, '#blame-text span[data-agent="ana"]'), /Ana drafts/)
  assert.match(await text(page, '#blame-text span[data-agent="bob"]'), /Bob adds/)
  // B is the newest record, A the one before: the diff shows what B added.
  await page.waitForFunction(() => (document.querySelector('#diff')?.textContent ?? '').includes('Bob adds'), { timeout: 15_000 })
  assert.match(await text(page, '#at-value'), /Bob adds the budget/)

  // Peers and durability.
  await page.waitForSelector('#peers tr[data-peer="ana"]', { timeout: 15_000 })
  await page.waitForSelector('#peers tr[data-peer="bob"]')
  await page.waitForSelector('#peers tr[data-peer="viewer"]')
  assert.match(await text(page, '#peers tr[data-peer="ana"]'), /synced/)
  assert.match(await text(page, '#durability-mode'), /^sync/)
  assert.doesNotMatch(await text(page, '#last-fsync'), /none/)
  await page.waitForSelector('#presence-list li[data-agent="bob"]', { timeout: 15_000 })
  assert.match(await text(page, '#presence-list li[data-agent="ana"]'), /on notes: drafting the plan/)

  // Live: a commit of ana shows in the value, the timeline and the names, with no reload.
  const rows = await count(page, '#timeline tbody tr')
  ;(await ana.yjs('notes')).doc.getText('t').insert(0, 'LIVE: ')
  await page.waitForFunction(() => /LIVE: Ana drafts/.test(document.querySelector('#value')?.textContent ?? ''), { timeout: 15_000 })
  await page.waitForFunction((n) => document.querySelectorAll('#timeline tbody tr').length > n, { timeout: 15_000 }, rows)
  await page.waitForFunction(() => /by ana/.test(document.querySelector('#names li[data-name="notes"] .meta')?.textContent ?? ''), { timeout: 15_000 })

  // Comparing two points: A at the first record.
  const first = await page.$eval('#timeline tbody tr:last-child', (row) => (row as any).dataset.seq as string)
  await clickOn(page, `#timeline button[data-pick="a"][data-seq="${first}"]`)
  await page.waitForFunction((seq) => (document.querySelector('#diff-title')?.textContent ?? '').includes(`#${seq} →`), { timeout: 15_000 }, first)

  // A counter: each agent's contribution.
  await clickOn(page, '#names li[data-name="clicks"]')
  await page.waitForFunction(() => (document.querySelector('#value')?.textContent ?? '').trim() === '5', { timeout: 15_000 })
  await page.waitForSelector('#blame-table tr[data-agent="bob"]', { timeout: 15_000 })
  await clickOn(page, '#names li[data-name="notes"]')
  await page.waitForSelector('#blame-text span[data-agent="bob"]', { timeout: 15_000 })
  // The serving peer's traffic, drawn with the shared charts once the page has polled its status a few times.
  await page.waitForSelector('#traffic-chart polyline', { timeout: 15_000 })
  await page.screenshot({ path: join(OUTPUT, 'inspector.png'), fullPage: true })
  assert.deepEqual(errors, [])
  assert.deepEqual(foreign, [])
  await page.close()
})

test('inspector: a read-only token cannot write, from the page or the API', { skip }, async () => {
  const page = await openInspector('viewer', SECRETS.viewer)
  const refusedBefore = hub.status().sessions.reduce((sum, s) => sum + s.refusedWrites, 0)
  await page.evaluate(async () => {
    const peer = (globalThis as any).inspector.peer
    const clicks = await peer.counter('clicks')
    clicks.increment(1000)
  })
  await until(() => hub.status().sessions.reduce((sum, s) => sum + s.refusedWrites, 0) > refusedBefore, 'the hub refuses the page')
  assert.equal((await hub.counter('clicks')).value(), 5)
  for (const method of ['POST', 'PUT', 'DELETE']) {
    const response = await fetch(`${origin}/ui/api/names`, { method, headers: { authorization: `Bearer ${SECRETS.ana}`, 'x-concord-peer': 'ana' } })
    assert.equal(response.status, 405, method)
  }
  const denied = await fetch(`${origin}/ui/api/status`, { headers: { authorization: 'Bearer wrong', 'x-concord-peer': 'viewer' } })
  assert.equal(denied.status, 401)
  const crossOrigin = await fetch(`${origin}/ui/api/status`, {
    headers: { authorization: `Bearer ${SECRETS.viewer}`, 'x-concord-peer': 'viewer', origin: 'http://evil.example' },
  })
  assert.equal(crossOrigin.status, 403)
  assert.deepEqual(errors, [])
  await page.close()
})

test('inspector: a token without access to a name never sees it (page, its peer, the API)', { skip }, async () => {
  const page = await openInspector('outsider', SECRETS.outsider)
  await page.waitForSelector('#names li[data-name="notes"]', { timeout: 15_000 })
  await page.waitForFunction(async () => (await (globalThis as any).inspector.peer.names()).some((n: { name: string }) => n.name === 'clicks'), {
    timeout: 15_000,
  })
  assert.equal(await count(page, '#names li[data-name="secret/salary"]'), 0)
  // Presence about a name it may not read is not shown either.
  await page.waitForSelector('#presence-list li[data-agent="ana"]', { timeout: 15_000 })
  assert.equal(await count(page, '#presence-list li[data-agent="bob"]'), 0)
  assert.doesNotMatch(await page.content(), /salary/)
  const held = await page.evaluate(async () => (await (globalThis as any).inspector.peer.names()).map((n: { name: string }) => n.name))
  assert.ok(!held.includes('secret/salary'), `the page's peer holds ${held}`)
  const headers = { authorization: `Bearer ${SECRETS.outsider}`, 'x-concord-peer': 'outsider' }
  const names = (await (await fetch(`${origin}/ui/api/names`, { headers })).json()) as { names: Array<{ name: string }> }
  assert.ok(!names.names.some((n) => n.name === 'secret/salary'))
  const hidden = await fetch(`${origin}/ui/api/history?name=secret%2Fsalary`, { headers })
  const absent = await fetch(`${origin}/ui/api/history?name=secret%2Fnothing`, { headers })
  assert.equal(hidden.status, 404)
  assert.deepEqual(await hidden.json(), await absent.json())
  const readable = await fetch(`${origin}/ui/api/history?name=secret%2Fsalary`, {
    headers: { authorization: `Bearer ${SECRETS.viewer}`, 'x-concord-peer': 'viewer' },
  })
  assert.equal(readable.status, 200)
  await page.screenshot({ path: join(OUTPUT, 'inspector-outsider.png'), fullPage: true })
  assert.deepEqual(errors, [])
  await page.close()
})
