/**
 * Persistence benchmarks (issue 4), each against a baseline measured in the
 * same run on the same disk (temp folders under os.tmpdir()):
 * - durable ingest, `sync` mode, 1 writer awaiting each append, vs the raw
 *   fsync rate (fs.writeSync + fs.fsyncSync of a record of the same size),
 *   and vs classic-level `put(sync)` alone (the floor of any store on LevelDB);
 * - durable ingest, `sync` mode, 64 concurrent writers, vs raw classic-level
 *   `batch(100 puts, { sync: true })` throughput, and vs y-leveldb
 *   `storeUpdate` (which never fsyncs): 64 writers awaiting each call, and
 *   as y-websocket's server calls it (from each doc's `update` handler,
 *   without awaiting);
 * - `async` mode ingest (the cost side of the durability table);
 * - recovery of a Yjs document from 100,000 single-character updates vs
 *   y-leveldb `getYDoc` on the same updates.
 *
 * Every ingest figure, ours and the baselines alike, is taken after a short
 * untimed warm-up of the same code path (JIT, caches), so the ratios compare
 * steady states.
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ClassicLevel } from 'classic-level'
import { LeveldbPersistence } from 'y-leveldb'
import * as Y from 'yjs'
import type { YjsReplica } from '../crdt/documents/yjs-replica.ts'
import { openStore, type StoreOptions } from '../persistence/index.ts'
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
    const warm = process.hrtime.bigint()
    while (seconds(warm) < 0.2) {
      writeSync(fd, record)
      fsyncSync(fd)
    }
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

/** classic-level `put(key, value, { sync: true })`, one at a time: the floor of a store on LevelDB. */
async function levelPutSyncRate(valueBytes: number, count: number): Promise<number> {
  return withDir(async (dir) => {
    const db = new ClassicLevel<string, Uint8Array>(dir, { valueEncoding: 'view' })
    await db.open()
    const value = new Uint8Array(valueBytes).fill(5)
    for (let i = 0; i < Math.ceil(count / 5); i++) await db.put(`warm${i}`, value, { sync: true })
    const start = process.hrtime.bigint()
    for (let i = 0; i < count; i++) await db.put(`k${String(i).padStart(10, '0')}`, value, { sync: true })
    const rate = count / seconds(start)
    await db.close()
    return rate
  })
}

/** Ingest with `writers` concurrent writers (one name each), each awaiting its appends. */
async function storeIngest(writers: number, perWriter: number, durability: StoreOptions['durability']): Promise<{ rate: number; recordBytes: number; batches: number }> {
  return withDir(async (dir) => {
    const store = await openStore(storeOptions(dir, { durability }))
    const chains = Array.from({ length: writers }, (_, w) => typingUpdates(perWriter, `w${w}`))
    // Warm-up, untimed: a fifth of the run on other names, in the same shape.
    const warmChains = Array.from({ length: writers }, (_, w) => typingUpdates(Math.ceil(perWriter / 5), `warm${w}`))
    await Promise.all(warmChains.map(async (chain, w) => {
      await store.open(`warm-${w}`, 'yjs')
      for (const delta of chain) await store.applyRemote(`warm-${w}`, delta)
    }))
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
    let key = 0
    const batchOf100 = () => Array.from({ length: 100 }, () => ({ type: 'put' as const, key: `k${String(key++).padStart(10, '0')}`, value }))
    for (let b = 0; b < Math.ceil(batches / 5); b++) await db.batch(batchOf100(), { sync: true })
    const start = process.hrtime.bigint()
    for (let b = 0; b < batches; b++) {
      const ops = Array.from({ length: 100 }, () => ({ type: 'put' as const, key: `k${String(key++).padStart(10, '0')}`, value }))
      await db.batch(ops, { sync: true })
    }
    const rate = (batches * 100) / seconds(start)
    await db.close()
    return rate
  })
}

/** y-leveldb storeUpdate with `writers` concurrent writers (one document each), each awaiting its calls. */
async function yLeveldbIngest(writers: number, perWriter: number): Promise<number> {
  return withDir(async (dir) => {
    const persistence = new LeveldbPersistence(dir)
    const chains = Array.from({ length: writers }, (_, w) => typingUpdates(perWriter, `w${w}`))
    const warmChains = Array.from({ length: writers }, (_, w) => typingUpdates(Math.ceil(perWriter / 5), `warm${w}`))
    await Promise.all(warmChains.map(async (chain, w) => {
      for (const update of chain) await persistence.storeUpdate(`warm-${w}`, update)
    }))
    const start = process.hrtime.bigint()
    await Promise.all(chains.map(async (chain, w) => {
      for (const update of chain) await persistence.storeUpdate(`doc-${w}`, update)
    }))
    const rate = (writers * perWriter) / seconds(start)
    await persistence.destroy()
    return rate
  })
}

/**
 * y-leveldb as y-websocket's server uses it: each update is applied to the
 * room's Y.Doc, whose `update` handler calls `storeUpdate` without awaiting
 * it (bin/utils.js of y-websocket). Rate: updates until every store resolved.
 */
async function yLeveldbAsYWebsocket(writers: number, perWriter: number): Promise<number> {
  return withDir(async (dir) => {
    const persistence = new LeveldbPersistence(dir)
    const chains = Array.from({ length: writers }, (_, w) => typingUpdates(perWriter, `w${w}`))
    const warmChains = Array.from({ length: writers }, (_, w) => typingUpdates(Math.ceil(perWriter / 5), `warm${w}`))
    const pending: Array<Promise<unknown>> = []
    const room = (name: string): Y.Doc => {
      const doc = new Y.Doc()
      doc.on('update', (update: Uint8Array) => { pending.push(persistence.storeUpdate(name, update)) })
      return doc
    }
    const run = async (lists: Uint8Array[][], prefix: string): Promise<void> => {
      const docs = lists.map((_, w) => room(`${prefix}-${w}`))
      for (let i = 0; i < lists[0].length; i++) {
        for (let w = 0; w < lists.length; w++) Y.applyUpdate(docs[w], lists[w][i])
      }
      await Promise.all(pending)
      pending.length = 0
    }
    await run(warmChains, 'warm')
    const start = process.hrtime.bigint()
    await run(chains, 'doc')
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
    const levelPut = await levelPutSyncRate(ours.recordBytes, 1500)
    return [
      {
        name: 'sync mode, 1 writer awaiting each append', value: ours.rate, unit: 'ops/s', better: 'higher',
        baseline: { label: `raw write+fsync of ${ours.recordBytes} B`, value: raw }, target: '>= 0.8',
      },
      {
        name: 'sync mode, 1 writer awaiting each append', value: ours.rate, unit: 'ops/s', better: 'higher',
        baseline: { label: 'classic-level put(sync) alone, 1 writer', value: levelPut },
      },
    ]
  },
}

const ingest64: Benchmark = {
  name: 'persistence/ingest-sync-64-writers',
  async run(): Promise<Measurement[]> {
    const ours = await storeIngest(64, 150, { mode: 'sync' })
    const level = await rawLevelBatchRate(ours.recordBytes, 150)
    const yleveldb = await yLeveldbIngest(64, 60)
    const yWebsocket = await yLeveldbAsYWebsocket(64, 60)
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
        name: 'sync mode, 64 concurrent writers', value: ours.rate, unit: 'ops/s', better: 'higher',
        baseline: { label: 'y-leveldb as y-websocket calls it (apply, storeUpdate unawaited), no fsync', value: yWebsocket }, target: '>= 20',
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
