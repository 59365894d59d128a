/**
 * Many names (issue 15), two LevelDB peers over WebSocket on 127.0.0.1: a
 * reconnect after k changes hydrates O(k) names (range-based
 * reconciliation reads state digests from the metadata), where the full
 * VERSIONS exchange hydrates every name; a peer without reconciliation
 * (as an older version) still syncs with one that has it, either way round.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { createPeer, type Peer } from '../../peer/index.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { until } from '../helpers/wait.ts'

const NAMES = 300
const CHANGED = 5
const CACHE = 16

const nameOf = (i: number): string => `task/${String(i).padStart(4, '0')}`

function syncedOnBoth(...peers: Peer[]): Promise<void> {
  return Promise.all(peers.map((peer) => new Promise<void>((resolve) => peer.once('peer-synced', () => resolve())))).then(() => undefined)
}

/** Hydrations on both stores for a reconnect after `CHANGED` of `NAMES` counters changed on `a`. */
async function reconnectHydrations(reconcile: boolean): Promise<{ hydrations: number; values: number[] }> {
  const dir = await tempDir('concord-many-names-')
  const peers: Peer[] = []
  try {
    const options = { cacheSize: CACHE, durability: { mode: 'async' as const, rpoMs: 50 }, sync: { reconcile } }
    const a = await createPeer({ agentId: 'a', dir: join(dir.path, 'a'), ...options })
    peers.push(a)
    const b = await createPeer({ agentId: 'b', dir: join(dir.path, 'b'), ...options })
    peers.push(b)
    for (let i = 0; i < NAMES; i++) (await a.counter(nameOf(i))).increment()
    await a.flush()
    const { url } = (await a.listen()) as { url: string }
    let synced = syncedOnBoth(a, b)
    await b.connect(url)
    await synced
    assert.equal((await b.store.listNames()).length, NAMES)
    b.disconnect(url)
    await until(() => a.connectedPeers.length === 0 && b.connectedPeers.length === 0, 'the sessions to close', 30_000)
    const changed = Array.from({ length: CHANGED }, (_, i) => nameOf(i * 61))
    for (const name of changed) (await a.counter(name)).increment(10)
    await a.flush()
    await b.flush()
    const before = a.store.hydrations + b.store.hydrations
    synced = syncedOnBoth(a, b)
    await b.connect(url)
    await synced
    const hydrations = a.store.hydrations + b.store.hydrations - before
    const values: number[] = []
    for (const name of changed) values.push((await b.counter(name)).value())
    return { hydrations, values }
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
    await dir.remove()
  }
}

test(`a reconnect after ${CHANGED} of ${NAMES} names changed hydrates O(${CHANGED}) names (the full VERSIONS exchange hydrates them all)`, async () => {
  const reconciled = await reconnectHydrations(true)
  assert.deepEqual(reconciled.values, Array(CHANGED).fill(11), 'b holds the changes')
  assert.ok(reconciled.hydrations <= 3 * CHANGED, `reconciliation hydrated ${reconciled.hydrations} names for ${CHANGED} changes`)
  const full = await reconnectHydrations(false)
  assert.deepEqual(full.values, Array(CHANGED).fill(11), 'b holds the changes (full VERSIONS)')
  assert.ok(full.hydrations >= NAMES / 2, `the full VERSIONS exchange hydrated ${full.hydrations} names (expected most of ${NAMES})`)
})

for (const [listener, dialer] of [
  ['old', 'new'],
  ['new', 'old'],
] as const) {
  test(`an ${listener} listener and a ${dialer} dialer (reconcile off on the old one) sync both ways, first and after changes on both sides`, async () => {
    const dir = await tempDir('concord-many-names-mixed-')
    const peers: Peer[] = []
    try {
      const make = (id: string, kind: 'old' | 'new') =>
        createPeer({ agentId: id, dir: join(dir.path, id), cacheSize: CACHE, durability: { mode: 'async', rpoMs: 50 }, sync: { reconcile: kind === 'new' } })
      const a = await make('a', listener)
      peers.push(a)
      const b = await make('b', dialer)
      peers.push(b)
      for (let i = 0; i < 60; i++) (await a.counter(nameOf(i))).increment()
      for (let i = 40; i < 100; i++) (await b.counter(nameOf(i))).increment(2)
      const { url } = (await a.listen()) as { url: string }
      let synced = syncedOnBoth(a, b)
      await b.connect(url)
      await synced
      const expect = async (peer: Peer, i: number, value: number) =>
        assert.equal((await peer.counter(nameOf(i))).value(), value, `${peer.agentId} ${nameOf(i)}`)
      for (const peer of [a, b]) {
        await expect(peer, 0, 1)
        await expect(peer, 50, 3)
        await expect(peer, 99, 2)
        assert.equal((await peer.store.listNames()).length, 100)
      }
      b.disconnect(url)
      await until(() => a.connectedPeers.length === 0 && b.connectedPeers.length === 0, 'the sessions to close', 30_000)
      ;(await a.counter(nameOf(10))).increment(5)
      ;(await b.counter(nameOf(90))).increment(7)
      ;(await b.counter('task/new')).increment()
      synced = syncedOnBoth(a, b)
      await b.connect(url)
      await synced
      for (const peer of [a, b]) {
        await expect(peer, 10, 6)
        await expect(peer, 90, 9)
        assert.equal((await peer.counter('task/new')).value(), 1)
      }
      const reconciled = a.stats().totals.reconciliations + b.stats().totals.reconciliations
      assert.equal(reconciled, 0, 'a session with an old peer resyncs with VERSIONS')
    } finally {
      await Promise.all(peers.map((peer) => peer.close()))
      await dir.remove()
    }
  })
}

test('names a peer may not read stay out of the reconciliation: it syncs the others and never learns them', async () => {
  const dir = await tempDir('concord-many-names-access-')
  const peers: Peer[] = []
  try {
    const a = await createPeer({
      agentId: 'a',
      dir: join(dir.path, 'a'),
      cacheSize: CACHE,
      auth: { accept: { b: 'b-secret-0123456789abcdef' } },
      access: (peer, name) => (peer === 'b' && name.startsWith('secret/') ? 'none' : 'write'),
    })
    peers.push(a)
    const b = await createPeer({ agentId: 'b', dir: join(dir.path, 'b'), cacheSize: CACHE, auth: { token: 'b-secret-0123456789abcdef' } })
    peers.push(b)
    for (let i = 0; i < 50; i++) (await a.counter(`public/${i}`)).increment()
    for (let i = 0; i < 50; i++) (await a.counter(`secret/${i}`)).increment()
    const { url } = (await a.listen()) as { url: string }
    const synced = syncedOnBoth(a, b)
    await b.connect(url)
    await synced
    const held = (await b.store.listNames()).map((info) => info.name)
    assert.equal(held.length, 50)
    assert.ok(
      held.every((name) => name.startsWith('public/')),
      'b holds only what it may read',
    )
    assert.ok(a.stats().totals.reconciliations + b.stats().totals.reconciliations > 0, 'they reconciled')
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
    await dir.remove()
  }
})
