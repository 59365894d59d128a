/** Runs the storage conformance suite on the in-memory storage, memory-level, classic-level and the fault-injecting wrapper. */
import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { isConcordError } from '../../crdt/errors.ts'
import { FaultStorage } from '../../persistence/storage/fault-storage.ts'
import { openLevelStorage } from '../../persistence/storage/level/index.ts'
import { MemoryStorage } from '../../persistence/storage/memory-storage.ts'
import type { Storage } from '../../persistence/storage/storage.ts'
import { runStorageTests } from '../../testing/index.ts'

runStorageTests({ describe, it }, 'memory (a store without a folder)', async () => {
  const storage = new MemoryStorage()
  return { storage, teardown: () => storage.close() }
})

runStorageTests({ describe, it }, 'memory-level', async () => {
  const storage = await openLevelStorage()
  return { storage, teardown: () => storage.close() }
})

runStorageTests({ describe, it }, 'classic-level', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'concord-storage-'))
  let current: Storage = await openLevelStorage({ dir })
  return {
    storage: current,
    reopen: async () => {
      await current.close()
      current = await openLevelStorage({ dir })
      return current
    },
    teardown: async () => {
      await current.close()
      await rm(dir, { recursive: true, force: true })
    },
  }
})

runStorageTests({ describe, it }, 'fault-storage (no faults)', async () => {
  const storage = await FaultStorage.create()
  return { storage, teardown: () => storage.close() }
})

it('classic-level: a folder held by another open storage is CONCORD_LOCKED', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'concord-storage-'))
  const first = await openLevelStorage({ dir })
  try {
    await assert.rejects(openLevelStorage({ dir }), (e) => isConcordError(e, 'CONCORD_LOCKED'))
  } finally {
    await first.close()
    await rm(dir, { recursive: true, force: true })
  }
})

it('fault-storage: a power cut keeps synced writes and a prefix of the rest; injected errors change nothing', async () => {
  const storage = await FaultStorage.create()
  const put = (k: string) => ({ type: 'put' as const, key: [k], value: Uint8Array.of(1) })
  await storage.batch([put('a')], { sync: true })
  await storage.batch([put('b')])
  await storage.batch([put('c')])
  await storage.batch([put('d')])
  storage.fault = (op) => (op === 'batch' ? new Error('EIO') : undefined)
  await assert.rejects(storage.batch([put('e')]), (e) => isConcordError(e, 'CONCORD_STORAGE_ERROR'))
  storage.fault = undefined
  assert.equal(await storage.get(['e']), undefined)
  const after = await storage.powerCut({ keep: 1 })
  await assert.rejects(storage.get(['a']), (e) => isConcordError(e, 'CONCORD_CLOSED'))
  assert.ok(await after.get(['a']))
  assert.ok(await after.get(['b']))
  assert.equal(await after.get(['c']), undefined)
  assert.equal(await after.get(['d']), undefined)
})
