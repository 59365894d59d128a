/**
 * Persistence benchmarks (issue 4), each against a baseline measured in the
 * same run on the same disk (temp folders under os.tmpdir()):
 * - durable ingest, `sync` mode, 1 writer awaiting each append, vs the raw
 *   fsync rate (fs.writeSync + fs.fsyncSync of a record of the same size);
 * - durable ingest, `sync` mode, 64 concurrent writers, vs raw classic-level
 *   `batch(100 puts, { sync: true })` throughput, and vs y-leveldb
 *   `storeUpdate` (which never fsyncs) with the same 64 writers;
 * - `async` mode ingest (the cost side of the durability table);
 * - recovery of a Yjs document from 100,000 single-character updates vs
 *   y-leveldb `getYDoc` on the same updates.
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { LeveldbPersistence } from 'y-leveldb'
import * as Y from 'yjs'
import { yjsReplicaFactory, type YjsReplica } from '../crdt/documents/yjs-replica.ts'
import { replicaId } from '../crdt/replica.ts'
import { openStore, type StoreOptions } from '../persistence/index.ts'
import { encodeRecord } from '../persistence/record.ts'
import type { Benchmark, Measurement } from './harness.ts'

async function withDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'concord-bench-'))
  try {
    return await fn(dir)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** `count` single-character Yjs updates, in order (as a typing agent makes them). */
function typingUpdates(count: number, agent: string): Uint8Array[] {
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  const text = doc.getText('t')
  const letters = 'abcdefghijklmnopqrstuvwxyz '
  for (let i = 0; i < count; i++) text.insert(i, letters[i % letters.length])
  void agent
  return updates
}

function seconds(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e9
}

/** Raw fsync rate: write + fsync of `bytes` to one file. */
async function rawFsyncRate(bytes: number, durationS: number): Promise<number> {
  return withDir(async (dir) => {
    const fd = openSync(join(dir, 'raw.log'), 'a')
    const record = new Uint8Array(bytes).fill(7)
    let n = 0
    const start = process.hrtime.bigint()
    while (seconds(start) < durationS) {
      writeSync(fd, record)
      fsyncSync(fd)
      n++
    }
    const rate = n / seconds(start)
    closeSync(fd)
    return rate
  })
}

const storeOptions = (dir: string, extra: Partial<StoreOptions> = {}): StoreOptions => ({ dir, replicaId: 'bench', sweepMs: 0, ...extra })

/** Ingest with `writers` concurrent writers (one name each), each awaiting its appends. */
async function storeIngest(writers: number, perWriter: number, durability: StoreOptions['durability']): Promise<{ rate: number; recordBytes: number; batches: number }> {
  return withDir(async (dir) => {
    const store = await openStore(storeOptions(dir, { durability }))
    const chains = Array.from({ length: writers }, (_, w) => typingUpdates(perWriter, `w${w}`))
    for (let w = 0; w < writers; w++) await store.open(`doc-${w}`, 'yjs')
    const start = process.hrtime.bigint()
    await Promise.all(chains.map(async (chain, w) => {
      for (const delta of chain) await store.applyRemote(`doc-${w}`, delta)
    }))
    await store.flush()
    const rate = (writers * perWriter) / seconds(start)
    const [record] = await store.history('doc-0', { from: perWriter, limit: 1 })
    await store.close()
    return { rate, recordBytes: record?.size ?? 100, batches: 0 }
  })
}

/** Raw classic-level: batches of 100 puts with sync: true. */
async function rawLevelBatchRate(valueBytes: number, batches: number): Promise<number> {
  return withDir(async (dir) => {
    const db = new ClassicLevel<string, Uint8Array>(dir, { valueEncoding: 'view' })
    await db.open()
    const value = new Uint8Array(valueBytes).fill(3)
    const start = process.hrtime.bigint()
    let key = 0
    for (let b = 0; b < batches; b++) {
      const ops = Array.from({ length: 100 }, () => ({ type: 'put' as const, key: `k${String(key++).padStart(10, '0')}`, value }))
      await db.batch(ops, { sync: true })
    }
    const rate = (batches * 100) / seconds(start)
    await db.close()
    return rate
  })
}

/** y-leveldb storeUpdate with `writers` concurrent writers (one document each). */
async function yLeveldbIngest(writers: number, perWriter: number): Promise<number> {
  return withDir(async (dir) => {
    const persistence = new LeveldbPersistence(dir)
    const chains = Array.from({ length: writers }, (_, w) => typingUpdates(perWriter, `w${w}`))
    const start = process.hrtime.bigint()
    await Promise.all(chains.map(async (chain, w) => {
      for (const update of chain) await persistence.storeUpdate(`doc-${w}`, update)
    }))
    const rate = (writers * perWriter) / seconds(start)
    await persistence.destroy()
    return rate
  })
}

const ingest1: Benchmark = {
  name: 'persistence/ingest-sync-1-writer',
  async run(): Promise<Measurement[]> {
    const ours = await storeIngest(1, 1500, { mode: 'sync' })
    const raw = await rawFsyncRate(ours.recordBytes, 1.5)
    return [{
      name: 'sync mode, 1 writer awaiting each append', value: ours.rate, unit: 'ops/s', better: 'higher',
      baseline: { label: `raw write+fsync of ${ours.recordBytes} B`, value: raw }, target: '>= 0.8',
    }]
  },
}

const ingest64: Benchmark = {
  name: 'persistence/ingest-sync-64-writers',
  async run(): Promise<Measurement[]> {
    const ours = await storeIngest(64, 150, { mode: 'sync' })
    const level = await rawLevelBatchRate(ours.recordBytes, 150)
    const yleveldb = await yLeveldbIngest(64, 60)
    const asyncMode = await storeIngest(64, 150, { mode: 'async', rpoMs: 100 })
    return [
      {
        name: 'sync mode, 64 concurrent writers', value: ours.rate, unit: 'ops/s', better: 'higher',
        baseline: { label: 'classic-level batch(100, sync)', value: level }, target: '>= 0.5',
      },
      {
        name: 'sync mode, 64 concurrent writers', value: ours.rate, unit: 'ops/s', better: 'higher',
        baseline: { label: 'y-leveldb storeUpdate, 64 writers, no fsync', value: yleveldb }, target: '>= 20',
      },
      {
        name: 'async mode (rpoMs 100), 64 concurrent writers', value: asyncMode.rate, unit: 'ops/s', better: 'higher',
        baseline: { label: 'sync mode, 64 writers', value: ours.rate },
      },
    ]
  },
}

const recovery: Benchmark = {
  name: 'persistence/recovery-yjs-100k',
  async run(): Promise<Measurement[]> {
    const count = 100_000
    const updates = typingUpdates(count, 'typist')
    const expected = updates.length
    // Ours: ingest with the default checkpoint policy, then time a cold open of the name.
    const timeOurs = async (onClose: boolean): Promise<number> => withDir(async (dir) => {
      const writer = await openStore(storeOptions(dir, { checkpoint: { onClose } }))
      await writer.open('doc', 'yjs')
      const pending: Promise<unknown>[] = []
      for (const update of updates) pending.push(writer.applyRemote('doc', update))
      await Promise.all(pending)
      await writer.close()
      const start = process.hrtime.bigint()
      const store = await openStore(storeOptions(dir))
      const doc = await store.open('doc', 'yjs') as YjsReplica
      const ms = seconds(start) * 1000
      if (doc.doc.getText('t').length !== expected) throw new Error(`recovered ${doc.doc.getText('t').length} of ${expected} characters`)
      await store.close()
      return ms
    })
    const withCloseCheckpoint = await timeOurs(true)
    const afterCrash = await timeOurs(false)
    // y-leveldb: the same updates through storeUpdate, then a cold getYDoc.
    const theirs = await withDir(async (dir) => {
      const writer = new LeveldbPersistence(dir)
      await Promise.all(updates.map((update) => writer.storeUpdate('doc', update)))
      await writer.destroy()
      const start = process.hrtime.bigint()
      const persistence = new LeveldbPersistence(dir)
      const ydoc = await persistence.getYDoc('doc')
      const ms = seconds(start) * 1000
      if (ydoc.getText('t').length !== expected) throw new Error('y-leveldb recovered a different document')
      await persistence.destroy()
      return ms
    })
    void yjsReplicaFactory
    void replicaId
    return [
      {
        name: 'recover 100k 1-char updates (no close checkpoint: newest policy checkpoint + replay)', value: afterCrash, unit: 'ms', better: 'lower',
        baseline: { label: 'y-leveldb getYDoc', value: theirs }, target: '<= 0.25',
      },
      {
        name: 'recover 100k 1-char updates (checkpoint on close)', value: withCloseCheckpoint, unit: 'ms', better: 'lower',
        baseline: { label: 'y-leveldb getYDoc', value: theirs }, target: '<= 0.25',
      },
    ]
  },
}

/** Persistence benchmarks. */
export const benchmarks: Benchmark[] = [ingest1, ingest64, recovery]

// Keep the record encoder referenced for readers comparing record sizes.
void encodeRecord
