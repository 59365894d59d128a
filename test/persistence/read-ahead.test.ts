/**
 * Hydration read-ahead (persistence/names/read-ahead.ts): names opened one
 * after another in name order are read from a few range scans, not three
 * storage reads each, and what it serves is never older than the storage.
 * Real LevelDB folders, counted through a wrapper around the real adapter.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { logKey, seqKey } from '../../persistence/format/keys.ts'
import { openStore } from '../../persistence/index.ts'
import { ReadAhead } from '../../persistence/names/read-ahead.ts'
import { openLevelStorage } from '../../persistence/storage/level/open-level-storage.ts'
import type { RangeOptions, SignalOptions, Storage, StorageKey, StorageOperation, WriteOptions } from '../../persistence/storage/storage.ts'
import { tempDir, textOf, typeText } from './helpers.ts'

/** The real adapter, counting the reads made through it. */
class CountingStorage implements Storage {
  gets = 0
  iterators = 0
  constructor(private readonly inner: Storage) {}
  get kind(): string {
    return this.inner.kind
  }
  get closed(): boolean {
    return this.inner.closed
  }
  get(key: StorageKey, options?: SignalOptions) {
    this.gets++
    return this.inner.get(key, options)
  }
  batch(operations: readonly StorageOperation[], options?: WriteOptions) {
    return this.inner.batch(operations, options)
  }
  flush(options?: SignalOptions) {
    return this.inner.flush(options)
  }
  iterate(range: RangeOptions) {
    this.iterators++
    return this.inner.iterate(range)
  }
  keys(range: RangeOptions) {
    this.iterators++
    return this.inner.keys(range)
  }
  close() {
    return this.inner.close()
  }
}

const NAMES = 60
const nameOf = (i: number) => `doc-${String(i).padStart(3, '0')}`

/** A folder of NAMES documents, each typed in three edits (three records), every tenth with a checkpoint. */
async function folder(dir: string): Promise<void> {
  // One record per change (mergeLocal 'async'): the names have several records to scan.
  const store = await openStore({ dir, agentId: 'a', sweepMs: 0, checkpoint: { onClose: false }, mergeLocal: 'async' })
  for (let i = 0; i < NAMES; i++) {
    const doc = await store.open(nameOf(i), 'yjs')
    for (const part of ['note ', String(i), '.']) typeText(doc, part)
    await store.flush()
    if (i % 10 === 0) await store.checkpoint(nameOf(i))
  }
  await store.close()
}

async function reopen(dir: string): Promise<{ store: Awaited<ReturnType<typeof openStore>>; counting: CountingStorage }> {
  const counting = new CountingStorage(await openLevelStorage({ dir }))
  const store = await openStore({ storage: counting, agentId: 'a', sweepMs: 0, checkpoint: { onClose: false } })
  return { store, counting }
}

describe('hydration read-ahead', () => {
  it('names opened in name order are read by range scans (a few reads for 60 names), with their values and checkpoints', async () => {
    const { dir, remove } = await tempDir()
    try {
      await folder(dir)
      const { store, counting } = await reopen(dir)
      await store.listNames()
      const before = counting.gets + counting.iterators
      for (let i = 0; i < NAMES; i++) assert.equal(textOf(await store.open(nameOf(i), 'yjs')), `note ${i}.`)
      const reads = counting.gets + counting.iterators - before
      // Without it: a metadata get and a log iterator per name, a checkpoint get for every tenth (126).
      assert.ok(reads < 40, `${reads} storage reads for ${NAMES} names opened in order`)
      assert.deepEqual((await store.verify(nameOf(NAMES - 1))).problems, [])
      await store.close()
    } finally {
      await remove()
    }
  })

  it('names opened out of order open with their values, at no more reads than without it', async () => {
    const { dir, remove } = await tempDir()
    try {
      await folder(dir)
      const { store, counting } = await reopen(dir)
      await store.listNames()
      const before = counting.gets + counting.iterators
      const order = Array.from({ length: NAMES }, (_, i) => i).sort((a, b) => ((a * 37) % NAMES) - ((b * 37) % NAMES))
      for (let k = 0; k < order.length; k++) {
        const i = k % 2 === 0 ? order[k] : NAMES - 1 - order[k]
        assert.equal(textOf(await store.open(nameOf(i), 'yjs')), `note ${i}.`)
      }
      // At most a metadata get and a log iterator per name and a checkpoint get for every tenth, as without it.
      const reads = counting.gets + counting.iterators - before
      assert.ok(reads <= 2 * NAMES + NAMES / 10, `${reads} reads`)
      await store.close()
    } finally {
      await remove()
    }
  })

  it('a write drops what the scans hold of the names it touches; a scan overlapping a write keeps nothing', async () => {
    const { dir, remove } = await tempDir()
    try {
      const storage = new CountingStorage(await openLevelStorage({ dir }))
      const ops: StorageOperation[] = []
      for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) {
        ops.push({ type: 'put', key: ['m', name], value: Uint8Array.of(1) })
        ops.push({ type: 'put', key: logKey(name, 1), value: Uint8Array.of(1) })
      }
      await storage.batch(ops)
      const readAhead = new ReadAhead(storage)
      const write = async (batch: StorageOperation[]) => {
        readAhead.beforeWrite(batch)
        await storage.batch(batch)
        readAhead.afterWrite()
      }
      const log = async (name: string) => {
        const values: number[] = []
        for await (const entry of readAhead.reader(name).iterate({ prefix: ['l', name], gt: logKey(name, 0) })) values.push(entry.value[0])
        return values
      }
      for (const name of ['a', 'b', 'c', 'd']) {
        readAhead.hydrating(name)
        assert.deepEqual(await readAhead.meta(name), Uint8Array.of(1))
        assert.deepEqual(await log(name), [1])
      }
      // 'd' started the scans: they hold 'e' and 'f'.
      const hits = readAhead.hits
      await write([
        { type: 'put', key: ['m', 'e'], value: Uint8Array.of(2) },
        { type: 'put', key: logKey('e', 2), value: Uint8Array.of(2) },
      ])
      readAhead.hydrating('e')
      assert.deepEqual(await readAhead.meta('e'), Uint8Array.of(2))
      assert.deepEqual(await log('e'), [1, 2])
      readAhead.hydrating('f')
      const iterators = storage.iterators
      assert.deepEqual(await readAhead.meta('f'), Uint8Array.of(1))
      assert.deepEqual(await log('f'), [1])
      assert.equal(storage.iterators, iterators, "'f' came from the scans")
      assert.ok(readAhead.hits >= hits + 2)

      // A write that starts while a scan runs: the scan keeps nothing.
      readAhead.clear()
      for (const name of ['a', 'b', 'c']) readAhead.hydrating(name)
      readAhead.hydrating('d')
      readAhead.beforeWrite([{ type: 'put', key: logKey('f', 2), value: Uint8Array.of(2) }])
      const scanning = log('d')
      await storage.batch([{ type: 'put', key: logKey('f', 2), value: Uint8Array.of(2) }])
      readAhead.afterWrite()
      assert.deepEqual(await scanning, [1])
      readAhead.hydrating('f')
      assert.deepEqual(await log('f'), [1, 2])
      await storage.close()
    } finally {
      await remove()
    }
  })

  it('a damaged record of a name read from a scan still fails the name; the others open', async () => {
    const { dir, remove } = await tempDir()
    try {
      await folder(dir)
      const raw = await openLevelStorage({ dir })
      const key = logKey(nameOf(21), 2)
      const value = (await raw.get(key))!
      const damaged = value.slice()
      damaged[damaged.length - 8] ^= 0xff
      await raw.batch([{ type: 'put', key, value: damaged }], { sync: true })
      await raw.close()
      assert.equal(key[2], seqKey(2))
      const { store } = await reopen(dir)
      for (let i = 0; i < NAMES; i++) {
        if (i === 21) {
          await assert.rejects(store.open(nameOf(i), 'yjs'), (error: unknown) => isConcordError(error) && error.code === ErrorCodes.CORRUPT_RECORD)
          continue
        }
        assert.equal(textOf(await store.open(nameOf(i), 'yjs')), `note ${i}.`)
      }
      await store.close()
    } finally {
      await remove()
    }
  })
})
