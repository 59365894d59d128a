/**
 * The browser peer in real headless Chromium (Debian's `chromium`, driven by
 * puppeteer-core): the page's `concord-crdt/browser` peer, on IndexedDB, syncs
 * with a Node peer (LevelDB folder, listening on 127.0.0.1) over WebSocket
 * both ways; its state survives a reload and a browser restart (read from
 * IndexedDB with the Node peer stopped); it resyncs, both ways, what changed
 * while it was closed. No console error or uncaught exception on any page,
 * and the page asks the server for nothing but its own files. Skipped, with
 * the reason printed, when no Chromium is installed.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import type { Browser, Page } from 'puppeteer-core'
import { createPeer, type Peer } from '../../peer/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'
import { bundleForBrowser } from './browser-bundle.ts'
import { browserSkipReason, launchChromium, openPage, servePage, type PageLog } from './chromium.ts'

const skip = browserSkipReason()
if (skip) console.log(`# SKIP test/browser: ${skip}`)

interface Values {
  clicks: number
  tags: string[]
  notes: string
  spec: { items?: string[] }
}

/** Opens (or reopens) the page's peer and its four replicas; `connect` dials the Node peer. */
async function startPagePeer(page: Page, connect?: string): Promise<void> {
  await page.evaluate(async (url) => {
    const g = globalThis as any
    const peer = await g.Concord.createPeer({ agentId: 'page', automerge: { wasm: '/automerge.wasm' } })
    g.peer = peer
    g.r = { clicks: await peer.counter('clicks'), tags: await peer.set('tags'), notes: await peer.yjs('notes'), spec: await peer.automerge('spec') }
    if (url) await peer.connect(url)
  }, connect ?? '')
}

function pageValues(page: Page): Promise<Values> {
  return page.evaluate(() => {
    const r = (globalThis as any).r
    return { clicks: r.clicks.value(), tags: [...r.tags.value()].sort(), notes: r.notes.doc.getText('t').toString(), spec: r.spec.value() }
  })
}

async function nodeValues(node: Peer): Promise<Values> {
  return {
    clicks: (await node.counter('clicks')).value(),
    tags: [...(await node.set<string>('tags')).value()].sort(),
    notes: (await node.yjs('notes')).doc.getText('t').toString(),
    spec: (await node.automerge<{ items?: string[] }>('spec')).value() as Values['spec'],
  }
}

async function nodeEdits(node: Peer, edit: { clicks: number; tag: string; text: string; item: string }): Promise<void> {
  const clicks = await node.counter('clicks')
  const tags = await node.set<string>('tags')
  const notes = await node.yjs('notes')
  const spec = await node.automerge<{ items?: string[] }>('spec')
  await node.transact(() => {
    clicks.increment(edit.clicks)
    tags.add(edit.tag)
    const text = notes.doc.getText('t')
    text.insert(text.length, edit.text)
    spec.change((doc) => {
      doc.items ??= []
      doc.items.push(edit.item)
    })
  })
}

async function pageEdits(page: Page, edit: { clicks: number; tag: string; text: string; item: string }): Promise<void> {
  await page.evaluate(async (e) => {
    const g = globalThis as any
    await g.peer.transact(() => {
      g.r.clicks.increment(e.clicks)
      g.r.tags.add(e.tag)
      const text = g.r.notes.doc.getText('t')
      text.insert(text.length, e.text)
      g.r.spec.change((doc: any) => {
        doc.items ??= []
        doc.items.push(e.item)
      })
    })
  }, edit)
}

async function eventually(what: string, read: () => Promise<Values>, expected: Values): Promise<void> {
  let last: Values | undefined
  try {
    await until(
      async () => {
        last = await read()
        return JSON.stringify(last) === JSON.stringify(expected)
      },
      what,
      20_000,
    )
  } catch (error) {
    assert.deepEqual(last, expected, `${what}: ${(error as Error).message}`)
  }
}

test("a Chromium page's peer syncs with a Node peer both ways, keeps its state in IndexedDB across a reload and a browser restart, and resyncs what it missed", {
  skip: skip ?? false,
  timeout: 120_000,
}, async () => {
  const bundle = await bundleForBrowser("export * from './test/browser/page/app.ts'", { minify: false })
  assert.deepEqual(bundle.nodeImports, [], 'the page bundle imports no Node built-in')
  const site = await servePage(bundle.code)
  const data = await tempDir('concord-browser-node-')
  const profile = await tempDir('concord-chromium-profile-')
  const log: PageLog = { errors: [], lines: [] }
  let browser: Browser | undefined
  let node: Peer | undefined
  try {
    node = await createPeer({ agentId: 'node', dir: join(data.path, 'node') })
    const { url, port } = await node.listen({ port: 0, host: '127.0.0.1' })
    await nodeEdits(node, { clicks: 2, tag: 'from-node', text: 'node:', item: 'n1' })

    // 1. Node -> page by anti-entropy on connect, then page -> Node live.
    browser = await launchChromium(profile.path)
    let page = await openPage(browser, site.url, log)
    await startPagePeer(page, url)
    await eventually('the page has what the Node peer wrote', () => pageValues(page), {
      clicks: 2,
      tags: ['from-node'],
      notes: 'node:',
      spec: { items: ['n1'] },
    })
    await pageEdits(page, { clicks: 3, tag: 'from-page', text: 'page:', item: 'p1' })
    let expected: Values = { clicks: 5, tags: ['from-node', 'from-page'], notes: 'node:page:', spec: { items: ['n1', 'p1'] } }
    await eventually('the Node peer has what the page wrote', () => nodeValues(node!), expected)
    // Node -> page live, while connected.
    await nodeEdits(node, { clicks: 1, tag: 'live', text: 'live:', item: 'n2' })
    expected = { clicks: 6, tags: ['from-node', 'from-page', 'live'], notes: 'node:page:live:', spec: { items: ['n1', 'p1', 'n2'] } }
    await eventually("the page has the Node peer's live edit", () => pageValues(page), expected)
    await page.evaluate(() => (globalThis as any).peer.flush({ acks: 1, timeoutMs: 10_000 }))

    // 2. A reload: the state comes back from IndexedDB, with the Node peer stopped (nothing to sync from).
    await page.reload({ waitUntil: 'load' })
    await page.waitForFunction('window.Concord !== undefined')
    await node.close()
    node = undefined
    await startPagePeer(page)
    assert.deepEqual(await pageValues(page), expected, 'after a reload, with the Node peer stopped, the page has its state from IndexedDB')
    // Offline edits of the page, durable locally.
    await pageEdits(page, { clicks: 4, tag: 'offline-page', text: 'offline:', item: 'p2' })
    await page.evaluate(() => (globalThis as any).peer.flush())
    const pageBeforeClose: Values = {
      clicks: 10,
      tags: ['from-node', 'from-page', 'live', 'offline-page'],
      notes: 'node:page:live:offline:',
      spec: { items: ['n1', 'p1', 'n2', 'p2'] },
    }
    assert.deepEqual(await pageValues(page), pageBeforeClose)

    // 3. The browser goes away; the Node peer comes back from its folder and writes meanwhile.
    await browser.close()
    browser = undefined
    node = await createPeer({ agentId: 'node', dir: join(data.path, 'node') })
    await node.listen({ port, host: '127.0.0.1' })
    await nodeEdits(node, { clicks: 20, tag: 'while-away', text: 'away:', item: 'n3' })

    // 4. A new browser on the same profile: the page's state is there before it connects; then both sides resync.
    browser = await launchChromium(profile.path)
    page = await openPage(browser, site.url, log)
    await startPagePeer(page)
    assert.deepEqual(await pageValues(page), pageBeforeClose, 'after a browser restart the page has its state from IndexedDB before connecting')
    await page.evaluate((u) => (globalThis as any).peer.connect(u), url)
    const pageNow = async () => pageValues(page)
    await until(async () => (await pageNow()).clicks === 30 && (await nodeValues(node!)).clicks === 30, 'both sides count 30 clicks', 20_000)
    const [inPage, inNode] = [await pageNow(), await nodeValues(node)]
    assert.deepEqual(inPage, inNode, 'the page and the Node peer converged')
    assert.deepEqual(inPage.tags, ['from-node', 'from-page', 'live', 'offline-page', 'while-away'])
    assert.ok(inPage.notes.startsWith('node:page:live:') && inPage.notes.includes('offline:') && inPage.notes.includes('away:'), inPage.notes)
    assert.deepEqual([...(inPage.spec.items ?? [])].sort(), ['n1', 'n2', 'n3', 'p1', 'p2'])

    await page.evaluate(() => (globalThis as any).peer.close())
    assert.deepEqual(log.errors, [], 'no console error, warning or uncaught exception on the pages')
    assert.deepEqual([...new Set(site.requests)].sort(), ['/', '/app.js', '/automerge.wasm'], 'the page asked for nothing but its own files')
  } finally {
    await browser?.close().catch(() => undefined)
    await node?.close().catch(() => undefined)
    await site.close()
    await data.remove()
    await profile.remove()
  }
})

test("Automerge's wasm is loaded on first need only; a page peer without Automerge takes every other name and reports the documents it leaves out", {
  skip: skip ?? false,
  timeout: 60_000,
}, async () => {
  const bundle = await bundleForBrowser("export * from './test/browser/page/app.ts'", { minify: false })
  const site = await servePage(bundle.code)
  const data = await tempDir('concord-browser-node-')
  const profile = await tempDir('concord-chromium-profile-')
  const log: PageLog = { errors: [], lines: [] }
  let browser: Browser | undefined
  const node = await createPeer({ agentId: 'node', dir: join(data.path, 'node') })
  try {
    const { url } = await node.listen({ port: 0, host: '127.0.0.1' })
    const counter = await node.counter('c')
    const doc = await node.automerge<{ title?: string }>('doc')
    // One transaction: anti-entropy answers it in one bundle, so a peer that refused the document whole would lose the counter too.
    await node.transact(() => {
      counter.increment(7)
      doc.change((d) => {
        d.title = 'from node'
      })
    })
    browser = await launchChromium(profile.path)

    // Without Automerge: the counter arrives, the document is left out (one error event), opening one is refused.
    const without = await openPage(browser, site.url, log)
    const outcome = await without.evaluate(async (u) => {
      const g = globalThis as any
      const peer = await g.Concord.createPeer({ agentId: 'plain', database: false })
      const errors: Array<{ name?: string; code: string }> = []
      peer.on('error', ({ name, error }: any) => errors.push({ name, code: error.code }))
      const c = await peer.counter('c')
      await peer.connect(u)
      await g.Concord.waitFor(() => c.value() === 7)
      let opened = 'opened'
      try {
        await peer.automerge('doc')
      } catch (error) {
        opened = (error as { code: string }).code
      }
      const names = (await peer.names()).map((info: { name: string }) => info.name)
      await peer.close()
      return { errors, opened, names }
    }, url)
    assert.deepEqual(outcome, { errors: [{ name: 'doc', code: 'CONCORD_INVALID_ARGUMENT' }], opened: 'CONCORD_INVALID_ARGUMENT', names: ['c'] })
    assert.ok(!site.requests.includes('/automerge.wasm'), 'a peer without Automerge never fetches its wasm')

    // With Automerge configured, a page that uses only a counter of a peer without documents fetches no wasm either.
    const lazy = await openPage(browser, site.url, log)
    await lazy.evaluate(async () => {
      const g = globalThis as any
      const peer = await g.Concord.createPeer({ agentId: 'lazy', database: false, automerge: { wasm: '/automerge.wasm' } })
      const c = await peer.counter('solo')
      await peer.transact(() => c.increment())
      await peer.close()
    })
    assert.ok(!site.requests.includes('/automerge.wasm'), "Automerge's wasm is not fetched before something needs it")

    // The first remote commit carrying a document loads it, and the commit is applied whole.
    const loaded = await lazy.evaluate(async (u) => {
      const g = globalThis as any
      const peer = await g.Concord.createPeer({ agentId: 'lazy-remote', database: false, automerge: { wasm: '/automerge.wasm' } })
      await peer.connect(u)
      await g.Concord.waitFor(async () => (await peer.names()).length === 2)
      const value = (await peer.automerge('doc')).value()
      const c = (await peer.counter('c')).value()
      await peer.close()
      return { value, c }
    }, url)
    assert.deepEqual(loaded, { value: { title: 'from node' }, c: 7 })
    assert.equal(site.requests.filter((path) => path === '/automerge.wasm').length, 1, 'the wasm was fetched once, when the document arrived')
    assert.deepEqual(log.errors, [], 'no console error, warning or uncaught exception on the pages')
  } finally {
    await browser?.close().catch(() => undefined)
    await node.close()
    await site.close()
    await data.remove()
    await profile.remove()
  }
})
