/**
 * The item set kept as names change (sync/item-index.ts) equals one built
 * from scratch (every name listed, read and sorted) after random creates,
 * changes, remote commits, deletes, archives, restarts and power cuts: on
 * a store (the peer's host, a real LevelDB folder; FaultStorage for power
 * cuts) with a small cache, so names leave memory and come back, and on
 * the in-memory host the simulated-network suites use.
 */
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createReplica } from '../../crdt/registry.ts'
import { agentId } from '../../crdt/agent-id.ts'
import type { Replica, ReplicaType } from '../../crdt/replica.ts'
import { openStore, type Store } from '../../persistence/index.ts'
import { FaultStorage } from '../../persistence/storage/fault-storage.ts'
import { StoreSyncHost } from '../../peer/store-sync-host.ts'
import { collectAllItems, ItemIndex, mergeItems } from '../../sync/item-index.ts'
import { compareNames, type ItemSet, itemOf } from '../../sync/reconcile.ts'
import { Prng } from '../../transports/memory/prng.ts'
import { tempDir } from '../helpers/temp-dir.ts'
import { localDelta } from '../helpers/local-delta.ts'
import { MemoryHost, mutate } from './helpers/memory-host.ts'

const TYPES: ReplicaType[] = ['pncounter', 'orset', 'lww-register', 'yjs']

/** The items of a set as plain rows (name, type, hash words), to compare. */
function rows(set: ItemSet): string[] {
  return set.names.map((name, i) => `${name} ${set.types[i]} ${set.h0[i]} ${set.h1[i]}`)
}

async function assertSameAsRebuilt(host: StoreSyncHost | MemoryHost, context: string): Promise<void> {
  const kept = await host.items!()
  const rebuilt = await collectAllItems(host)
  assert.deepEqual(rows(kept), rows(rebuilt), `${context}: the kept item set differs from one built from scratch`)
  for (let i = 1; i < kept.size; i++) assert.ok(compareNames(kept.names[i - 1], kept.names[i]) < 0, `${context}: sorted, no duplicate`)
}

/** A remote change of `name` (a delta of another agent's replica of `type`), as a session would apply it. */
function remoteDelta(type: ReplicaType, random: Prng, tag: string): Uint8Array | undefined {
  const replica = createReplica(type, { agentId: agentId(`remote-${random.int(0, 3)}`) })
  return localDelta(replica, () => mutate(replica, random, tag)) ?? undefined
}

/** One random step on a store behind `host`: a local create or change, a remote commit, an open without change, a delete, an archive. */
async function randomStep(
  store: Store,
  host: StoreSyncHost,
  random: Prng,
  names: Map<string, ReplicaType>,
  archived: Map<string, ReplicaType> | undefined,
  step: number,
): Promise<void> {
  const existing = [...names.keys()]
  const roll = random.int(0, 99)
  if (roll < 30 || existing.length === 0) {
    const name = `n/${String(random.int(0, 399)).padStart(4, '0')}`
    const type = names.get(name) ?? archived?.get(name) ?? random.pick(TYPES)
    const replica: Replica = await store.open(name, type)
    archived?.delete(name)
    names.set(name, type)
    mutate(replica, random, `s${step}`)
  } else if (roll < 55) {
    const name = random.pick(existing)
    mutate(await store.open(name, names.get(name)!), random, `c${step}`)
  } else if (roll < 70) {
    const entries: Array<{ name: string; replicaType: ReplicaType; delta: Uint8Array }> = []
    for (let k = random.int(1, 3); k > 0; k--) {
      const name = random.chance(0.3) ? `r/${random.int(0, 99)}` : random.pick(existing)
      if (archived?.has(name)) continue
      const type = names.get(name) ?? random.pick(TYPES)
      const delta = remoteDelta(type, random, `r${step}`)
      if (delta && !entries.some((entry) => entry.name === name)) entries.push({ name, replicaType: type, delta })
    }
    for (const entry of entries) names.set(entry.name, entry.replicaType)
    if (entries.length > 0) await host.applyRemote(entries, { remoteAgentId: 'remote' })
  } else if (roll < 78) {
    // Opened, never changed: not stored, not listed.
    const i = random.int(0, 49)
    await store.open(`empty/${i}`, TYPES[i % TYPES.length])
  } else if (roll < 90) {
    const name = random.pick(existing)
    await store.delete(name)
    names.delete(name)
  } else if (archived) {
    const name = random.pick(existing)
    await store.flush()
    await store.archive(name)
    // Sometimes brought back at once, else later by a create.
    if (random.chance(0.5)) await store.open(name, names.get(name)!)
    else {
      archived.set(name, names.get(name)!)
      names.delete(name)
    }
  }
}

test('the kept item set equals a rebuilt one after random creates, changes, remote commits, deletes, archives and restarts (real LevelDB folder, cache of 8)', async () => {
  const dir = await tempDir('concord-item-index-')
  const random = new Prng(20261202)
  const names = new Map<string, ReplicaType>()
  const archived = new Map<string, ReplicaType>()
  try {
    for (let life = 0; life < 3; life++) {
      const store = await openStore({ dir: dir.path, agentId: 'a', sweepMs: 0, cacheSize: 8, durability: { mode: 'async', rpoMs: 20 } })
      const host = new StoreSyncHost({ store })
      try {
        await assertSameAsRebuilt(host, `life ${life}, on open`)
        assert.equal(host.itemIndex.fullBuilds, 1)
        for (let step = 0; step < 120; step++) {
          await randomStep(store, host, random, names, archived, step)
          if (random.chance(0.2)) await assertSameAsRebuilt(host, `life ${life}, step ${step}`)
        }
        // A burst of new names between two snapshots (merged at once as they leave memory).
        for (let i = 0; i < 400; i++) mutate(await store.open(`burst/${life}/${String(i).padStart(3, '0')}`, 'pncounter'), random, 'b')
        await store.flush()
        await assertSameAsRebuilt(host, `life ${life}, after a burst of 400 names`)
        assert.equal(host.itemIndex.fullBuilds, 1, 'listed every name once per life')
      } finally {
        host.stop()
        await store.close()
      }
    }
  } finally {
    await dir.remove()
  }
})

test('the kept item set equals a rebuilt one across power cuts (FaultStorage: unsynced writes lost)', async () => {
  const random = new Prng(7)
  const names = new Map<string, ReplicaType>()
  let storage = await FaultStorage.create()
  for (let cut = 0; cut < 4; cut++) {
    const store = await openStore({ storage, agentId: 'a', sweepMs: 0, cacheSize: 8, durability: { mode: 'async', rpoMs: 50 } })
    const host = new StoreSyncHost({ store })
    await assertSameAsRebuilt(host, `cut ${cut}, on open`)
    for (let step = 0; step < 60; step++) {
      await randomStep(store, host, random, names, undefined, step)
      if (random.chance(0.25)) await assertSameAsRebuilt(host, `cut ${cut}, step ${step}`)
    }
    await assertSameAsRebuilt(host, `cut ${cut}, before the cut`)
    const survivor = await storage.powerCut({ keep: random.int(0, storage.unsyncedBatches) })
    host.stop()
    await store.close().catch(() => undefined)
    storage = survivor
    // What survived is what the store lists now.
    names.clear()
    const reopened = await openStore({ storage, agentId: 'a', sweepMs: 0 })
    for (const { name, type } of await reopened.listNames()) names.set(name, type)
    await reopened.close()
  }
  await storage.close()
})

test('the in-memory host: the kept item set equals a rebuilt one after random creates, local and remote changes, and drops', async () => {
  const random = new Prng(99)
  const host = new MemoryHost('a')
  const remote = new MemoryHost('b', { itemIndex: false })
  for (let step = 0; step < 600; step++) {
    const roll = random.int(0, 99)
    const name = `m/${random.int(0, 299)}`
    const type = host.typeOf(name) ?? remote.typeOf(name) ?? random.pick(TYPES)
    if (roll < 45) mutate(host.open(name, type), random, `l${step}`)
    else if (roll < 80) {
      if ((remote.typeOf(name) ?? type) !== type) continue // dropped here and made again as another type
      const replica = remote.open(name, type)
      const delta = localDelta(replica, () => mutate(replica, random, `r${step}`))
      if (delta) await host.applyRemote([{ name, replicaType: type, delta }], 'remote')
    } else if (roll < 90) host.drop(name)
    if (random.chance(0.1)) await assertSameAsRebuilt(host, `step ${step}`)
  }
  await assertSameAsRebuilt(host, 'at the end')
  assert.equal(host.itemIndex.fullBuilds, 1)
})

test('a stream of new names is merged between snapshots O(log n) times, each name read once', async () => {
  const types = new Map<string, ReplicaType>()
  const digestOf = (name: string): Uint8Array => {
    const bytes = new Uint8Array(16)
    for (let i = 0; i < name.length; i++) bytes[i % 16] = (bytes[i % 16] * 31 + name.charCodeAt(i)) & 0xff
    return bytes
  }
  const source = {
    list: () => [...types].map(([name, type]) => ({ name, type })),
    listedType: (name: string) => types.get(name),
    digest: (name: string) => (types.has(name) ? digestOf(name) : undefined),
    version: () => new Uint8Array(0),
    deltaSince: () => null,
  }
  const index = new ItemIndex(source)
  assert.equal((await index.snapshot()).size, 0)
  const count = 20_000
  for (let i = 0; i < count; i++) {
    const name = `n/${String(i).padStart(5, '0')}`
    types.set(name, 'gcounter')
    index.touch(name)
    // The eager merge runs once the host's event is done: let it.
    await Promise.resolve()
  }
  // Every merge copies the whole set: at a sixteenth of the set it ran ~70 times for 20,000 names (~17 copies of each).
  assert.ok(index.eagerMerges > 0 && index.eagerMerges <= 12, `${index.eagerMerges} merges between snapshots`)
  const merged = await index.snapshot()
  assert.equal(merged.size, count)
  assert.equal(index.reread, count, 'each name read once, by the merge or the snapshot that took it')
  assert.deepEqual(rows(merged), rows(await collectAllItems(source)))
  assert.equal(index.fullBuilds, 1)
})

test('mergeItems: replaces, adds and removes in one pass; a snapshot taken before stays as it was', async () => {
  const item = (name: string, n: number) => itemOf(name, 'gcounter', new Uint8Array([n, 0, 0, 0, n, 0, 0, 0]))
  const host = new MemoryHost('a')
  for (const name of ['b', 'd', 'f']) host.open(name, 'gcounter')
  const index = new ItemIndex({
    list: () => host.list(),
    listedType: (name) => host.typeOf(name),
    version: (n) => host.version(n),
    deltaSince: (n, v) => host.deltaSince(n, v),
  })
  const before = await index.snapshot()
  const merged = mergeItems(before, [
    ['a', item('a', 1)],
    ['d', null],
    ['f', item('f', 2)],
    ['g', item('g', 3)],
  ])
  assert.deepEqual(merged.names, ['a', 'b', 'f', 'g'])
  assert.equal(merged.h0[2], 2)
  assert.deepEqual(before.names, ['b', 'd', 'f'], 'the older set is unchanged')
  host.drop('d')
  index.touch('d')
  const after = await index.snapshot()
  assert.deepEqual(after.names, ['b', 'f'])
  assert.deepEqual(before.names, ['b', 'd', 'f'], 'a snapshot is immutable')
  assert.equal(before.fingerprint(0, 3).length, 8)
  assert.deepEqual(after.fingerprint(0, 2), mergeItems(before, [['d', null]]).fingerprint(0, 2))
})
