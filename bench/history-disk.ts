/**
 * Disk cost of full history (issue 16): a store folder after a workload,
 * under retention 'full' (the default), the archive tier (every record
 * moved to gzip segment files) and the old default `{ checkpoints: 2 }`.
 * Sizes are taken after a full LevelDB compaction (deleted keys' tables
 * are gone, as in a store that ran for a while). A measurement of bytes, not of time: run it alone,
 * `npx tsx bench/history-disk.ts` (it is not part of `npm run bench`).
 *
 * Workloads: the B4 trace (automerge-paper, 259,778 one-edit Yjs
 * transactions) logged one record per edit (async mode, merging off: the
 * record count of a sync-mode peer) and merged as an async peer logs it
 * (the default); 100,000 counter increments, one record each.
 *
 * `--signed`: the same records signed (issue 16, "Trust": record format 3,
 * the store's own Ed25519 key) beside unsigned ones, full history only, one
 * record per change: `npx tsx bench/history-disk.ts --signed`.
 */
import { readdirSync, statSync } from 'node:fs'
import { ClassicLevel } from 'classic-level'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { YjsReplica } from '../crdt/documents/yjs-replica.ts'
import type { GCounterReplica } from '../crdt/types/index.ts'
import { openStore, type Retention, type Store } from '../persistence/index.ts'
import { loadTrace, type SequentialTrace } from '../test/crdt/documents/traces.ts'

function folderBytes(dir: string): number {
  let total = 0
  let entries: string[]
  try {
    entries = readdirSync(dir)
  } catch {
    return 0
  }
  for (const entry of entries) {
    const path = join(dir, entry)
    const stat = statSync(path)
    total += stat.isDirectory() ? folderBytes(path) : stat.size
  }
  return total
}

const mib = (bytes: number): string => `${(bytes / (1 << 20)).toFixed(2)} MiB`

interface Workload {
  readonly label: string
  readonly merge: boolean
  run(store: Store): Promise<string>
}

const trace = loadTrace<SequentialTrace>('automerge-paper')

const b4 = (merge: boolean): Workload => ({
  label: `B4 trace, ${trace.txns.length} edits, ${merge ? 'merged (async default)' : 'one record per edit'}`,
  merge,
  async run(store) {
    const doc = (await store.open('b4', 'yjs')) as YjsReplica
    const text = doc.doc.getText('t')
    let i = 0
    for (const txn of trace.txns) {
      for (const [pos, del, ins] of txn.patches) {
        if (del > 0) text.delete(pos, del)
        if (ins.length > 0) text.insert(pos, ins)
      }
      if (++i % 5000 === 0) await store.flush()
    }
    await store.flush()
    if (text.toString() !== trace.endContent) throw new Error('B4: the text does not match endContent')
    return 'b4'
  },
})

const counter: Workload = {
  label: '100,000 counter increments, one record each',
  merge: false,
  async run(store) {
    const c = (await store.open('hits', 'gcounter')) as GCounterReplica
    for (let i = 0; i < 100_000; i++) {
      c.increment(1)
      if (i % 5000 === 4999) await store.flush()
    }
    await store.flush()
    return 'hits'
  },
}

async function measure(workload: Workload, retention: Retention | 'archive-all', signed = false): Promise<{ db: number; archive: number; records: number }> {
  const root = await mkdtemp(join(tmpdir(), 'concord-history-disk-'))
  const dir = join(root, 'db')
  try {
    const clock = { now: 1_000_000 }
    const policy: Retention = retention === 'archive-all' ? { archiveAfterMs: 1 } : retention
    const store = await openStore({
      dir,
      agentId: 'bench',
      sweepMs: 0,
      durability: { mode: 'async', rpoMs: 1000 },
      retention: policy,
      now: () => clock.now,
      ...(workload.merge ? {} : { deltaMerger: () => undefined }),
      ...(signed ? { signatures: { key: new Uint8Array(32).fill(7) } } : {}),
    })
    const name = await workload.run(store)
    await store.checkpoint(name)
    if (retention === 'archive-all') {
      clock.now += 10_000_000
      await store.applyRetention(name)
    }
    const records = (await store.history(name, { reverse: true, limit: 1 }))[0].seq
    await store.close()
    // LevelDB keeps deleted keys' old tables until it compacts them: compact everything, as a long-running store eventually does.
    const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, { keyEncoding: 'view', valueEncoding: 'view' })
    await db.open()
    await db.compactRange(Uint8Array.of(0), Uint8Array.of(0xff, 0xff))
    await db.close()
    return { db: folderBytes(dir), archive: folderBytes(`${dir}.archive`), records }
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

if (process.argv.includes('--signed')) {
  for (const workload of [counter, b4(false)]) {
    const started = performance.now()
    const plain = await measure(workload, 'full')
    const plainMs = performance.now() - started
    const signedStarted = performance.now()
    const signed = await measure(workload, 'full', true)
    const signedMs = performance.now() - signedStarted
    console.log(`${workload.label}: ${signed.records} records, full history`)
    console.log(`  unsigned: LevelDB ${mib(plain.db)} (${(plainMs / 1000).toFixed(1)} s for the run)`)
    console.log(`  signed:   LevelDB ${mib(signed.db)} (${(signedMs / 1000).toFixed(1)} s for the run)`)
    console.log(
      `  signed / unsigned: ${(signed.db / plain.db).toFixed(2)}x disk, ${(signedMs / plainMs).toFixed(2)}x time; ${((signed.db - plain.db) / signed.records).toFixed(1)} bytes more per record`,
    )
  }
  process.exit(0)
}

for (const workload of [b4(false), b4(true), counter]) {
  const full = await measure(workload, 'full')
  const archived = await measure(workload, 'archive-all')
  const trimmed = await measure(workload, { checkpoints: 2 })
  console.log(`${workload.label}: ${full.records} records`)
  console.log(`  full (default):        LevelDB ${mib(full.db)}`)
  console.log(`  archiveAfterMs (all):  LevelDB ${mib(archived.db)} + segments ${mib(archived.archive)} = ${mib(archived.db + archived.archive)}`)
  console.log(`  { checkpoints: 2 }:    LevelDB ${mib(trimmed.db)} (history trimmed)`)
  console.log(`  full / trimmed: ${(full.db / trimmed.db).toFixed(1)}x; per record: ${((full.db - trimmed.db) / full.records).toFixed(1)} bytes`)
}
