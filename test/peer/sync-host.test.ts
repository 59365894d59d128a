/**
 * The sync host holds replicas only while the protocol reads them (a slice
 * at a time): a peer that syncs many names keeps no more of them in memory
 * than its store's bounded cache (plus the names the application opened and
 * the slice under way). A name whose data is corrupt is left out of sync
 * and reported; the others still sync.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { createReplica } from '../../crdt/registry.ts'
import type { Replica } from '../../crdt/replica.ts'
import { agentId } from '../../crdt/agent-id.ts'
import type { PNCounterReplica } from '../../crdt/types/index.ts'
import { isConcordError, type ConcordError } from '../../crdt/errors.ts'
import { openStore } from '../../persistence/index.ts'
import { logKey } from '../../persistence/format/keys.ts'
import { openLevelStorage } from '../../persistence/storage/level/index.ts'
import { createPeer, type Peer, type PeerOptions } from '../../peer/index.ts'
import { StoreSyncHost } from '../../peer/store-sync-host.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { localDelta } from '../helpers/local-delta.ts'
import { until } from '../helpers/wait.ts'

const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

/** A delta that increments a fresh counter by `n`. */
function incrementBy(n: number): Uint8Array {
  const counter = createReplica('pncounter', { agentId: agentId(`w${n}`) }) as PNCounterReplica
  return localDelta(counter, () => counter.increment(n))!
}

/**
 * A store folder holding 'good' and 'bad' (pncounters, 5 records each, no
 * checkpoint) with a bit flipped in the middle of 'bad's log, written
 * through the storage layer.
 */
async function seedWithCorruptName(dir: string, replica: string): Promise<void> {
  const seed = await openStore({ dir, agentId: replica, sweepMs: 0, checkpoint: { everyRecords: 0, everyBytes: 0, onClose: false } })
  for (let i = 1; i <= 5; i++)
    await seed.commit([
      { name: 'good', type: 'pncounter', delta: incrementBy(i) },
      { name: 'bad', type: 'pncounter', delta: incrementBy(i) },
    ])
  await seed.close()
  const storage = await openLevelStorage({ dir })
  const record = (await storage.get(logKey('bad', 3)))!.slice()
  record[record.length - 9] ^= 0x10
  await storage.batch([{ type: 'put', key: logKey('bad', 3), value: record }], { sync: true })
  await storage.close()
}

/** Runs `fn` with a temp folder and a `peer(options)` that creates peers in it (`dir` relative to it), closing them after. */
async function withPeers(fn: (root: string, peer: (id: string, extra?: Partial<PeerOptions>) => Promise<Peer>) => Promise<void>): Promise<void> {
  const dir = await tempDir('concord-host-')
  const peers: Peer[] = []
  try {
    await fn(dir.path, async (id, extra = {}) => {
      const peer = await createPeer({ agentId: id, dir: join(dir.path, id), ...extra })
      peers.push(peer)
      return peer
    })
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
    await dir.remove()
  }
}

test('the sync host keeps no replicas of its own: list() hydrates nothing, hold() keeps what a slice reads until released', async () => {
  const dir = await tempDir('concord-host-')
  let store = await openStore({ dir: dir.path, agentId: 'h', sweepMs: 0, cacheSize: 8 })
  let host = new StoreSyncHost({ store })
  try {
    for (let i = 0; i < 60; i++) await host.applyRemote([{ name: `n${i}`, replicaType: 'pncounter', delta: incrementBy(i + 1) }], undefined)
    assert.equal(host.heldReplicas, 0, 'remote commits do not pin their names')
    await store.close()
    // A fresh store: nothing hydrated. Listing reads the names from the store, hydrating none.
    store = await openStore({ dir: dir.path, agentId: 'h', sweepMs: 0, cacheSize: 8 })
    host = new StoreSyncHost({ store })
    const names = [...(await host.list())]
    assert.equal(names.length, 60)
    assert.equal(store.cachedNames, 0, 'list() hydrated nothing')
    assert.throws(() => host.version('n0'), /not held/, 'a name neither held nor hydrated is not read')
    // Held: every version and delta is readable synchronously, across turns, whatever the cache size.
    const release = await host.hold(names.map((info) => info.name))
    assert.equal(host.heldReplicas, 60)
    await nextTurn()
    for (const { name } of names) {
      assert.ok(host.version(name).length > 0)
      assert.ok(host.deltaSince(name, null) !== null)
    }
    release()
    release()
    assert.equal(host.heldReplicas, 0, 'released')
    await store.flush()
    await until(() => store.cachedNames <= 8, `the store keeps at most its cache of 8 names (holds ${store.cachedNames})`)
    // A name the application opened reads without a hold.
    const opened: Replica = await store.open('n5', 'pncounter')
    assert.deepEqual(host.version('n5'), opened.version())
  } finally {
    host.stop()
    await store.close()
    await dir.remove()
  }
})

test('a peer that syncs 200 names over WebSocket keeps only its cache of them in memory', () =>
  withPeers(async (_root, peer) => {
    const a = await peer('a')
    for (let i = 0; i < 200; i++) await a.store.commit([{ name: `c${i}`, type: 'pncounter', delta: incrementBy(i + 1) }])
    const b = await peer('b', { cacheSize: 16 })
    const { url } = await a.listen({ port: 0 })
    await b.connect(url)
    await until(async () => (await b.store.names()).length === 200, 'b holds every name', 20_000)
    await until(() => b.store.persistedSeq('c199') >= 1, 'the last name is durable on b')
    for (const i of [0, 57, 199]) assert.equal((await b.store.open(`c${i}`, 'pncounter')).value(), i + 1)
    await nextTurn()
    const held = (b as unknown as { host: StoreSyncHost }).host.heldReplicas
    assert.equal(held, 0, `b's sync host holds ${held} replicas`)
    // Names leave the cache once their metadata caught up with their log (a write of its own).
    await until(() => b.store.cachedNames <= 16, `b's store keeps at most its cache of 16 names (holds ${b.store.cachedNames})`)
    // A later change still reaches b live, and a reconnect's anti-entropy still works.
    await a.store.commit([{ name: 'c3', delta: incrementBy(100) }])
    await until(async () => (await b.store.open('c3', 'pncounter')).value() === 104, 'a live change reaches b')
  }))

test('a name with a corrupt record is left out of sync and reported once; every other name syncs', () =>
  withPeers(async (root, peer) => {
    await seedWithCorruptName(join(root, 'a'), 'a')
    const a = await peer('a')
    const reported: Array<{ name?: string; error: ConcordError }> = []
    a.events.on('error', (event) => reported.push(event))
    const b = await peer('b')
    const { url } = await a.listen({ port: 0 })
    await b.connect(url)
    await until(async () => (await b.store.names()).some((info) => info.name === 'good'), "'good' reaches b")
    await until(async () => (await b.store.open('good', 'pncounter')).value() === 15, "all of 'good' reaches b")
    assert.deepEqual(
      (await b.store.names()).map((info) => info.name),
      ['good'],
    )
    assert.equal(reported.length, 1)
    assert.equal(reported[0].name, 'bad')
    assert.ok(isConcordError(reported[0].error, 'CONCORD_CORRUPT_RECORD'))
    // A second session lists again: still left out, not reported again, and the session is not failed.
    const c = await peer('c')
    await c.connect(url)
    await until(async () => (await c.store.names()).some((info) => info.name === 'good'), "'good' reaches c")
    assert.equal(reported.length, 1)
  }))

test('a commit that carries a name whose local data is corrupt: the rest is applied, the session stays up; after a repair the name syncs again', () =>
  withPeers(async (root, peer) => {
    await seedWithCorruptName(join(root, 'r'), 'r')
    const receiver = await peer('r')
    const reported: Array<{ name?: string; error: ConcordError }> = []
    receiver.events.on('error', (event) => reported.push(event))
    let disconnects = 0
    receiver.events.on('peer-disconnected', () => disconnects++)
    const { url } = await receiver.listen({ port: 0 })

    // The sender holds 'bad' too, and changes it in the same transactions as other names.
    const sender = await peer('s')
    const bad = await sender.counter('bad')
    const fresh = await sender.counter('fresh')
    await sender.transact(() => {
      bad.increment(7)
      fresh.increment(7)
    })
    await sender.connect(url)
    // The anti-entropy answer bundles 'bad' with 'fresh' and 'good': everything but 'bad' lands.
    await until(async () => (await receiver.store.names()).some((info) => info.name === 'fresh'), "'fresh' reaches the receiver")
    assert.equal((await receiver.store.open('fresh', 'pncounter')).value(), 7)
    // A live transaction with both names after the first sync.
    await sender.transact(() => {
      bad.increment(1)
      fresh.increment(1)
    })
    await until(async () => (await receiver.store.open('fresh', 'pncounter')).value() === 8, 'the live change of fresh lands')
    await assert.rejects(receiver.store.open('bad', 'pncounter'), (error) => isConcordError(error, 'CONCORD_CORRUPT_RECORD'))
    assert.equal(disconnects, 0, 'the session was never dropped')
    assert.deepEqual(
      reported.map((event) => event.name),
      ['bad'],
    )
    // 'good' went the other way, untouched by the damage.
    await until(async () => (await sender.counter('good')).value() === 15, "'good' reaches the sender")

    // Repaired while the peer runs (a damaged name is never open): it syncs again, both ways.
    const report = await receiver.store.repair('bad')
    assert.equal(report.cutAt, 3)
    // The receiver's own increments but the lost one (1+2+4+5, one agent each) and the sender's 8.
    await until(async () => (await receiver.store.open('bad', 'pncounter')).value() === 20, "the sender's changes to 'bad' refill the receiver")
    await until(async () => bad.value() === 20, "the receiver's 'bad' reaches the sender")
    await sender.transact(() => {
      bad.increment(2)
      fresh.increment(2)
    })
    await until(async () => (await receiver.store.open('bad', 'pncounter')).value() === 22, "live changes to 'bad' land again")
    assert.equal(disconnects, 0)
  }))

test('a name created through the store after the first anti-entropy (a door writing for its clients) is still offered to a peer that connects later', async () => {
  const peers: Peer[] = []
  try {
    const hub = await createPeer({ agentId: 'hub' })
    const early = await createPeer({ agentId: 'early' })
    peers.push(hub, early)
    const { url } = await hub.listen()
    const synced = new Promise((resolve) => early.once('peer-synced', resolve))
    await early.connect(url)
    await synced // the hub answered early's VERSIONS: it listed its names
    const made = (await hub.store.open('made-by-a-door', 'pncounter')) as PNCounterReplica
    made.increment(7)
    await hub.flush()
    const late = await createPeer({ agentId: 'late' })
    peers.push(late)
    await late.connect(url)
    await until(async () => (await late.store.typeOf('made-by-a-door')) !== undefined, 'the late peer is sent the name')
    assert.equal((await late.counter('made-by-a-door')).value(), 7)
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
  }
})
