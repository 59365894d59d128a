/**
 * The periodic sweep of a store whose names have no TTL of their own reads
 * no metadata (issue 15: it read every name's metadata each sweep, 1M
 * metadata per sweep at a million names): the names with a TTL are learnt
 * by one scan, then kept by every metadata the store writes.
 */
import assert from 'node:assert/strict'
import { it } from 'node:test'
import type { PNCounterReplica } from '../../crdt/types/index.ts'
import { META_PREFIX } from '../../persistence/format/keys.ts'
import { openStore } from '../../persistence/index.ts'
import { openLevelStorage } from '../../persistence/storage/level/index.ts'
import type { RangeOptions, Storage } from '../../persistence/storage/storage.ts'
import { tempDir } from './helpers.ts'

/** A LevelDB folder's storage that counts the scans of the name metadata. */
async function countingStorage(dir: string): Promise<{ readonly storage: Storage; readonly metaScans: () => number }> {
  const level = await openLevelStorage({ dir })
  let scans = 0
  const counts = (range: RangeOptions): void => {
    if (range.prefix.length === META_PREFIX.length && range.prefix[0] === META_PREFIX[0]) scans++
  }
  const storage = new Proxy(level, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver)
      if ((key === 'iterate' || key === 'keys') && typeof value === 'function') {
        return (range: RangeOptions) => {
          counts(range)
          return value.call(target, range)
        }
      }
      return typeof value === 'function' ? value.bind(target) : value
    },
  }) as Storage
  return { storage, metaScans: () => scans }
}

it('the sweep of a store without TTL names reads the metadata once per store lifetime, and still expires a name given a TTL later', async () => {
  const { dir, remove } = await tempDir()
  try {
    let now = 1_000_000
    {
      const store = await openStore({ dir, agentId: 'a', sweepMs: 0, now: () => now })
      for (let i = 0; i < 200; i++) ((await store.open(`n-${i}`, 'pncounter')) as PNCounterReplica).increment(1)
      await store.close()
    }
    const { storage, metaScans } = await countingStorage(dir)
    const store = await openStore({ storage, agentId: 'a', sweepMs: 0, now: () => now, cacheSize: 1 })
    try {
      const opened = metaScans()
      await store.sweep()
      assert.equal(metaScans(), opened + 1, 'the first sweep learns the TTL names by one scan')
      for (let i = 0; i < 5; i++) await store.sweep()
      assert.equal(metaScans(), opened + 1, 'later sweeps of a store without TTL names read no metadata')
      // A name created with a TTL, and an existing one given one: the sweep expires both once due, without a new scan.
      await store.open('short', 'pncounter', { ttlMs: 5000 })
      ;((await store.open('short', 'pncounter')) as PNCounterReplica).increment(2)
      await store.open('n-7', 'pncounter', { ttlMs: 5000 })
      await store.open('n-8', 'pncounter') // the most recently used name (kept from expiry) is another one
      await store.flush()
      const expired: string[] = []
      store.events.on('expired', ({ name }) => expired.push(name))
      const scansBefore = metaScans()
      now += 60_000
      await store.sweep()
      assert.deepEqual(expired.sort(), ['n-7', 'short'])
      // The expiry pass reads the metadata; the next sweep, with no TTL name left, reads none.
      const afterExpiry = metaScans()
      assert.ok(afterExpiry > scansBefore, 'TTL names present: the sweep ran its expiry pass')
      await store.sweep()
      assert.equal(metaScans(), afterExpiry, 'the expired names left the set')
      assert.equal((await store.names()).length, 199)
    } finally {
      await store.close()
    }
  } finally {
    await remove()
  }
})

it('a TTL set before the store was opened is found by the first sweep (the set is learnt from the folder)', async () => {
  const { dir, remove } = await tempDir()
  try {
    let now = 1_000_000
    {
      const store = await openStore({ dir, agentId: 'a', sweepMs: 0, now: () => now })
      ;((await store.open('keep', 'pncounter')) as PNCounterReplica).increment(1)
      ;((await store.open('brief', 'pncounter', { ttlMs: 1000 })) as PNCounterReplica).increment(1)
      await store.close()
    }
    now += 10_000
    const store = await openStore({ dir, agentId: 'a', sweepMs: 0, now: () => now })
    try {
      const expired: string[] = []
      store.events.on('expired', ({ name }) => expired.push(name))
      await store.sweep()
      assert.deepEqual(expired, ['brief'])
      assert.deepEqual(
        (await store.names()).map((info) => info.name),
        ['keep'],
      )
    } finally {
      await store.close()
    }
  } finally {
    await remove()
  }
})
