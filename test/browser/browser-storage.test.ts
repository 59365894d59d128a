/**
 * The browser peer's storage in real headless Chromium: the storage
 * conformance suite on IndexedDB (snapshot iteration included, which plain
 * browser-level fails); `sync` mode writes in `strict` IndexedDB
 * transactions and `async` mode in `relaxed` ones with a `strict` flush (as
 * the browser reports each transaction's durability); one tab at a time
 * holds a database; and acknowledged writes survive the whole browser being
 * killed with SIGKILL. Skipped, with the reason printed, without Chromium.
 */
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type { Browser } from 'puppeteer-core'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'
import { bundleForBrowser } from './browser-bundle.ts'
import { browserSkipReason, launchChromium, openPage, servePage, type PageLog, type PageServer } from './chromium.ts'

const skip = browserSkipReason()
if (skip) console.log(`# SKIP test/browser: ${skip}`)

let site: PageServer
let profile: { path: string; remove: () => Promise<void> }
let browser: Browser | undefined
const log: PageLog = { errors: [], lines: [] }

before(async () => {
  if (skip) return
  const bundle = await bundleForBrowser("export * from './test/browser/page/storage-suite.ts'", {
    minify: false,
    aliases: { 'node:assert/strict': 'test/browser/page/assert-shim.ts' },
  })
  assert.deepEqual(bundle.nodeImports, [])
  site = await servePage(bundle.code)
  profile = await tempDir('concord-chromium-profile-')
  browser = await launchChromium(profile.path)
})

after(async () => {
  if (skip) return
  await browser?.close().catch(() => undefined)
  await site.close()
  await profile.remove()
  assert.deepEqual(log.errors, [], 'no console error, warning or uncaught exception on the pages')
})

test("the storage conformance suite passes on the browser peer's IndexedDB storage", { skip: skip ?? false, timeout: 60_000 }, async () => {
  const page = await openPage(browser!, site.url, log)
  const results = (await page.evaluate(() => (globalThis as any).Concord.runStorageSuite())) as Array<{ name: string; error?: string }>
  await page.close()
  assert.ok(results.length >= 8, `${results.length} tests ran`)
  assert.deepEqual(
    results.filter((r) => r.error !== undefined),
    [],
    'every conformance test passes in Chromium',
  )
})

test('sync mode writes in strict IndexedDB transactions; async mode in relaxed ones, made durable by a strict flush', {
  skip: skip ?? false,
  timeout: 60_000,
}, async () => {
  const page = await openPage(browser!, site.url, log)
  const seen = await page.evaluate(async () => {
    const g = globalThis as any
    // Record the durability the browser gives each read-write transaction.
    const durabilities: string[] = []
    const original = g.IDBDatabase.prototype.transaction
    g.IDBDatabase.prototype.transaction = function (this: unknown, ...args: unknown[]) {
      const transaction = original.apply(this, args)
      if (args[1] === 'readwrite') durabilities.push(transaction.durability)
      return transaction
    }
    const run = async (database: string, durability: unknown) => {
      const peer = await g.Concord.createPeer({ agentId: database, durability })
      const counter = await peer.counter('n')
      durabilities.length = 0
      for (let i = 0; i < 3; i++) await peer.transact(() => counter.increment())
      await peer.flush()
      const written = [...durabilities]
      await peer.close()
      return written
    }
    return { sync: await run('durable-sync', { mode: 'sync' }), async: await run('durable-async', { mode: 'async', rpoMs: 60_000 }) }
  })
  await page.close()
  assert.ok(seen.sync.length >= 3 && seen.sync.every((d) => d === 'strict'), `sync mode: ${seen.sync.join(', ')}`)
  assert.ok(
    seen.async.includes('relaxed') && seen.async.at(-1) === 'strict' && seen.async.every((d) => d === 'relaxed' || d === 'strict'),
    `async mode: ${seen.async.join(', ')}`,
  )
})

test('one tab at a time holds a database: a second gets CONCORD_LOCKED until the first closes its peer', { skip: skip ?? false, timeout: 60_000 }, async () => {
  const first = await openPage(browser!, site.url, log)
  const second = await openPage(browser!, site.url, log)
  await first.evaluate(async () => {
    const g = globalThis as any
    g.peer = await g.Concord.createPeer({ agentId: 'shared' })
    await g.peer.transact(() => undefined)
  })
  const refused = await second.evaluate(async () => {
    const g = globalThis as any
    try {
      await g.Concord.createPeer({ agentId: 'shared', lockWaitMs: 200 })
      return 'opened'
    } catch (error) {
      return (error as { code?: string }).code ?? String(error)
    }
  })
  assert.equal(refused, 'CONCORD_LOCKED')
  await first.evaluate(() => (globalThis as any).peer.close())
  const opened = await second.evaluate(async () => {
    const g = globalThis as any
    const peer = await g.Concord.createPeer({ agentId: 'shared', lockWaitMs: 2_000 })
    await peer.close()
    return peer.store.storage.kind
  })
  assert.equal(opened, 'indexeddb:shared')
  await first.close()
  await second.close()
})

test('writes acknowledged in sync mode survive the whole browser being killed with SIGKILL', { skip: skip ?? false, timeout: 60_000 }, async () => {
  const killed = await tempDir('concord-chromium-kill-')
  let victim: Browser | undefined = await launchChromium(killed.path)
  let again: Browser | undefined
  try {
    const page = await openPage(victim, site.url, { errors: [], lines: [] })
    let acked = 0
    page.on('console', (message) => {
      const match = /^acked (\d+)$/.exec(message.text())
      if (match) acked = Math.max(acked, Number(match[1]))
    })
    // Each increment is reported once its transaction resolved (durable); the loop runs until the browser dies.
    void page
      .evaluate(async () => {
        const g = globalThis as any
        const peer = await g.Concord.createPeer({ agentId: 'victim' })
        const counter = await peer.counter('n')
        for (let i = 1; ; i++) {
          await peer.transact(() => counter.increment())
          console.log(`acked ${i}`)
        }
      })
      .catch(() => undefined)
    await until(() => acked >= 40, '40 acknowledged increments', 30_000)
    const pid = victim.process()!.pid!
    const exited = new Promise<void>((resolve) => victim!.process()!.once('exit', () => resolve()))
    process.kill(-pid, 'SIGKILL') // the browser's whole process group: no chance to flush anything
    await exited
    const lastAcked = acked
    victim = undefined
    again = await launchChromium(killed.path)
    const reopened = await openPage(again, site.url, log)
    const value = await reopened.evaluate(async () => {
      const g = globalThis as any
      const peer = await g.Concord.createPeer({ agentId: 'victim' })
      const n = (await peer.counter('n')).value()
      await peer.close()
      return n
    })
    assert.ok(value >= lastAcked, `the counter is ${value} after the kill, and ${lastAcked} increments had been acknowledged`)
  } finally {
    if (victim) process.kill(-victim.process()!.pid!, 'SIGKILL')
    await again?.close().catch(() => undefined)
    await killed.remove()
  }
})
