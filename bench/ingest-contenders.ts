/**
 * The contenders of the ingest benchmarks (bench/persistence.bench.ts), each
 * run in a process of its own (see {@link isolatedContender}): contenders
 * that share a heap pay for each other's garbage (a store slice would be
 * charged for the collection of the Y.Docs of the y-websocket contender),
 * so the parent only tells each child when to run a slice, and the child
 * times the slice itself.
 *
 * Protocol (IPC, parent to child): `{ open: dir }`, `{ slice: index, bytes }`
 * (negative index: an untimed warm-up slice; `bytes`: the record size to
 * write, for the raw contenders), `{ close: true }`; the child answers each
 * with `{ ok: true, ops?, seconds?, recordBytes? }` or `{ error }`.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { ClassicLevel } from 'classic-level'
import { LeveldbPersistence } from 'y-leveldb'
import * as Y from 'yjs'
import { openStore, type Store, type StoreOptions } from '../persistence/index.ts'

/** What a contender is; plain data, sent to its process. */
export type ContenderSpec =
  | { kind: 'store'; writers: number; perSlice: number; slices: number; warmup: number; durability: NonNullable<StoreOptions['durability']> }
  | { kind: 'raw-fsync'; perSlice: number }
  | { kind: 'level-put'; perSlice: number }
  | { kind: 'level-batch'; batchesPerSlice: number }
  | { kind: 'y-leveldb'; writers: number; perSlice: number; slices: number; warmup: number }
  | { kind: 'y-websocket'; writers: number; perSlice: number; slices: number; warmup: number }

/** One side of an interleaved ingest comparison, as the parent drives it. */
export interface Contender {
  open(dir: string): Promise<void>
  /** Runs slice `index` (negative: warm-up); `bytes` is the record size for the raw contenders. */
  slice(index: number, bytes: number): Promise<{ ops: number; seconds: number; recordBytes?: number }>
  close(): Promise<void>
}

/** `count` single-character Yjs updates, in order (as a typing agent makes them). */
export function typingUpdates(count: number): Uint8Array[] {
  const doc = new Y.Doc()
  const updates: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => updates.push(update))
  const text = doc.getText('t')
  const letters = 'abcdefghijklmnopqrstuvwxyz '
  for (let i = 0; i < count; i++) text.insert(i, letters[i % letters.length])
  return updates
}

interface LocalContender {
  open(dir: string): Promise<void>
  /** Runs the slice; returns the operations done. */
  slice(index: number, bytes: number): Promise<{ ops: number }>
  close(): Promise<void>
  /** The store's newest record size (read after a slice, untimed). */
  recordBytes?(): Promise<number | undefined>
}

/** Our store: `writers` names, one writer each, every writer awaiting each append. */
function storeContender(spec: Extract<ContenderSpec, { kind: 'store' }>): LocalContender {
  let store: Store | undefined
  const chains = Array.from({ length: spec.writers }, () => typingUpdates(spec.perSlice * (spec.slices + spec.warmup)))
  return {
    async open(dir) {
      store = await openStore({ dir, agentId: 'bench', sweepMs: 0, durability: spec.durability })
      for (let w = 0; w < spec.writers; w++) await store.open(`doc-${w}`, 'yjs')
    },
    async slice(index) {
      const from = (index + spec.warmup) * spec.perSlice
      await Promise.all(
        chains.map(async (chain, w) => {
          for (let i = from; i < from + spec.perSlice; i++) await store!.applyRemote(`doc-${w}`, chain[i])
        }),
      )
      return { ops: spec.writers * spec.perSlice }
    },
    async close() {
      await store?.close()
    },
    async recordBytes() {
      const [record] = await store!.history('doc-0', { reverse: true, limit: 1 })
      return record?.size
    },
  }
}

/** Raw write + fsync of a `bytes`-long record to one file. */
function rawFsyncContender(spec: Extract<ContenderSpec, { kind: 'raw-fsync' }>): LocalContender {
  let fd: number | undefined
  return {
    async open(dir) {
      fd = openSync(join(dir, 'raw.log'), 'a')
    },
    async slice(_index, bytes) {
      const record = new Uint8Array(bytes).fill(7)
      for (let i = 0; i < spec.perSlice; i++) {
        writeSync(fd!, record)
        fsyncSync(fd!)
      }
      return { ops: spec.perSlice }
    },
    async close() {
      if (fd !== undefined) closeSync(fd)
    },
  }
}

/** A classic-level database with ascending keys. */
function levelContender(run: (db: ClassicLevel<string, Uint8Array>, value: Uint8Array, nextKey: () => string) => Promise<number>): LocalContender {
  let db: ClassicLevel<string, Uint8Array> | undefined
  let key = 0
  const nextKey = () => `k${String(key++).padStart(10, '0')}`
  return {
    async open(dir) {
      db = new ClassicLevel<string, Uint8Array>(dir, { valueEncoding: 'view' })
      await db.open()
    },
    async slice(_index, bytes) {
      return { ops: await run(db!, new Uint8Array(bytes).fill(5), nextKey) }
    },
    async close() {
      await db?.close()
    },
  }
}

/** y-leveldb `storeUpdate`, one document per writer, each writer awaiting its calls. */
function yLeveldbContender(spec: Extract<ContenderSpec, { kind: 'y-leveldb' }>): LocalContender {
  let persistence: LeveldbPersistence | undefined
  const chains = Array.from({ length: spec.writers }, () => typingUpdates(spec.perSlice * (spec.slices + spec.warmup)))
  return {
    async open(dir) {
      persistence = new LeveldbPersistence(dir)
    },
    async slice(index) {
      const from = (index + spec.warmup) * spec.perSlice
      await Promise.all(
        chains.map(async (chain, w) => {
          for (let i = from; i < from + spec.perSlice; i++) await persistence!.storeUpdate(`doc-${w}`, chain[i])
        }),
      )
      return { ops: spec.writers * spec.perSlice }
    },
    async close() {
      await persistence?.destroy()
    },
  }
}

/**
 * y-leveldb as y-websocket's server uses it: each update is applied to the
 * room's Y.Doc, whose `update` handler calls `storeUpdate` without awaiting
 * it (bin/utils.js of y-websocket). A slice ends when every store resolved.
 */
function yWebsocketContender(spec: Extract<ContenderSpec, { kind: 'y-websocket' }>): LocalContender {
  let persistence: LeveldbPersistence | undefined
  const chains = Array.from({ length: spec.writers }, () => typingUpdates(spec.perSlice * (spec.slices + spec.warmup)))
  const pending: Array<Promise<unknown>> = []
  let docs: Y.Doc[] = []
  return {
    async open(dir) {
      const ldb = new LeveldbPersistence(dir)
      persistence = ldb
      docs = chains.map((_, w) => {
        const doc = new Y.Doc()
        doc.on('update', (update: Uint8Array) => {
          pending.push(ldb.storeUpdate(`doc-${w}`, update))
        })
        return doc
      })
    },
    async slice(index) {
      const from = (index + spec.warmup) * spec.perSlice
      for (let i = from; i < from + spec.perSlice; i++) {
        for (let w = 0; w < spec.writers; w++) Y.applyUpdate(docs[w], chains[w][i])
      }
      await Promise.all(pending)
      pending.length = 0
      return { ops: spec.writers * spec.perSlice }
    },
    async close() {
      await persistence?.destroy()
    },
  }
}

function localContender(spec: ContenderSpec): LocalContender {
  switch (spec.kind) {
    case 'store':
      return storeContender(spec)
    case 'raw-fsync':
      return rawFsyncContender(spec)
    case 'level-put':
      return levelContender(async (db, value, nextKey) => {
        for (let i = 0; i < spec.perSlice; i++) await db.put(nextKey(), value, { sync: true })
        return spec.perSlice
      })
    case 'level-batch':
      return levelContender(async (db, value, nextKey) => {
        for (let b = 0; b < spec.batchesPerSlice; b++) {
          await db.batch(
            Array.from({ length: 100 }, () => ({ type: 'put' as const, key: nextKey(), value })),
            { sync: true },
          )
        }
        return spec.batchesPerSlice * 100
      })
    case 'y-leveldb':
      return yLeveldbContender(spec)
    case 'y-websocket':
      return yWebsocketContender(spec)
  }
}

const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

/** A contender running in a child process of its own (this module as its main). */
export function isolatedContender(spec: ContenderSpec): Contender {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [JSON.stringify(spec)], {
    execArgv: ['--import', TSX],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  let exited = false
  child.once('exit', () => {
    exited = true
  })
  const request = (message: object): Promise<Record<string, unknown>> =>
    new Promise((resolve, reject) => {
      if (exited) return reject(new Error(`the ${spec.kind} contender has exited`))
      const onExit = (code: number | null) => reject(new Error(`the ${spec.kind} contender exited (code ${code})`))
      child.once('exit', onExit)
      child.once('message', (reply: Record<string, unknown>) => {
        child.off('exit', onExit)
        if (typeof reply.error === 'string') reject(new Error(`${spec.kind} contender: ${reply.error}`))
        else resolve(reply)
      })
      child.send(message)
    })
  return {
    async open(dir) {
      await request({ open: dir })
    },
    async slice(index, bytes) {
      const reply = await request({ slice: index, bytes })
      return { ops: reply.ops as number, seconds: reply.seconds as number, recordBytes: reply.recordBytes as number | undefined }
    },
    async close() {
      if (exited) return
      await request({ close: true }).catch(() => undefined)
      child.disconnect()
    },
  }
}

/** The child side: runs one contender as the parent says. */
async function serve(spec: ContenderSpec): Promise<void> {
  const contender = localContender(spec)
  // The parent went away (finished or killed): nothing more will come.
  process.on('disconnect', () => process.exit(0))
  process.on('message', async (message: { open?: string; slice?: number; bytes?: number; close?: boolean }) => {
    try {
      if (message.open !== undefined) {
        await contender.open(message.open)
        process.send!({ ok: true })
      } else if (message.slice !== undefined) {
        const start = process.hrtime.bigint()
        const { ops } = await contender.slice(message.slice, message.bytes ?? 100)
        const seconds = Number(process.hrtime.bigint() - start) / 1e9
        const recordBytes = await contender.recordBytes?.()
        process.send!({ ok: true, ops, seconds, recordBytes })
      } else if (message.close) {
        await contender.close()
        process.send!({ ok: true })
      }
    } catch (error) {
      process.send!({ error: (error as Error)?.stack ?? String(error) })
    }
  })
}

if (process.send !== undefined && process.argv[1] === fileURLToPath(import.meta.url)) {
  await serve(JSON.parse(process.argv[2]) as ContenderSpec)
}
