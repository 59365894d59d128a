/**
 * `many-names/cold-first-sync` (issue 15): N counters and N/10 Yjs
 * documents written and closed (a sender with nothing in memory, as after a
 * restart), then a first sync into an empty peer, the sender in a process
 * of its own (bench/first-sync-sender-child.ts) so that its CPU per name
 * is its own: answered from storage (`SyncHost.storedDeltas`) beside the
 * baseline of the same folder answered by hydrating every name (`hold`),
 * in the same run. Rows: sender CPU per name, receiver CPU per name (this
 * process), names/s, names the sender hydrated. N: CONCORD_BENCH_COLD_NAMES, 20,000 by default;
 * CONCORD_BENCH_PROF=<dir> profiles the sender.
 */
import { fork } from 'node:child_process'
import { cp } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { YjsReplica } from '../crdt/documents/index.ts'
import type { PNCounterReplica } from '../crdt/types/index.ts'
import { createPeer } from '../peer/index.ts'
import { tempDir } from '../test/helpers/temp-dir.ts'
import type { Benchmark, Measurement } from './harness.ts'

const COUNT = Number(process.env.CONCORD_BENCH_COLD_NAMES ?? 20_000)
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const CHILD = fileURLToPath(new URL('./first-sync-sender-child.ts', import.meta.url))
/** CONCORD_BENCH_PROF=<dir>: the sender child writes a CPU profile there (node --cpu-prof). */
const PROFILE = process.env.CONCORD_BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.CONCORD_BENCH_PROF}`] : []
const options = { durability: { mode: 'async' as const, rpoMs: 100 }, cacheSize: 256 }

type Kind = 'pncounter' | 'yjs'
interface Run {
  readonly ms: number
  readonly senderUsPerName: number
  /** CPU of this process (the receiver) during the sync, per name. */
  readonly receiverUsPerName: number
  readonly hydrations: number
}

const nameOf = (i: number): string => `task/${String(i).padStart(7, '0')}`

/** A folder of `count` names of `kind`, one change each, closed. */
async function seed(dir: string, kind: Kind, count: number): Promise<void> {
  const peer = await createPeer({ agentId: 'a', dir, ...options })
  for (let start = 0; start < count; start += 1000) {
    const asked = Array.from({ length: Math.min(1000, count - start) }, (_, k) => ({ name: nameOf(start + k), type: kind }))
    for (const replica of await peer.openMany(asked)) {
      if (kind === 'pncounter') (replica as PNCounterReplica).increment(1)
      else (replica as YjsReplica).doc.getText('t').insert(0, 'hello')
    }
  }
  await peer.flush()
  await peer.close()
}

/** A first sync from a copy of `seeded` (sender in a child process, `mode`) into an empty peer in this one. */
async function firstSync(seeded: string, root: string, mode: 'stored' | 'hold', count: number): Promise<Run> {
  const dir = join(root, `${mode}-${Math.random().toString(36).slice(2)}`)
  await cp(seeded, join(dir, 'a'), { recursive: true })
  const child = fork(CHILD, [join(dir, 'a'), mode], { execArgv: [...PROFILE, '--import', TSX], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const exited = new Promise((resolve) => child.once('exit', resolve))
  const next = (): Promise<Record<string, number | string>> => new Promise((resolve) => child.once('message', (m) => resolve(m as Record<string, number>)))
  const { url } = await next()
  const b = await createPeer({ agentId: 'b', dir: join(dir, 'b'), ...options })
  try {
    const synced = new Promise<void>((resolve) => b.once('peer-synced', () => resolve()))
    child.send('start')
    const cpu = process.cpuUsage()
    const start = performance.now()
    await b.connect(url as string)
    await synced
    const ms = performance.now() - start
    const used = process.cpuUsage(cpu)
    const held = (await b.store.listNames()).length
    if (held !== count) throw new Error(`bench: b holds ${held} names after the first sync, not ${count}`)
    const report = next()
    child.send('report')
    const { cpuUs, hydrations } = (await report) as { cpuUs: number; hydrations: number }
    return { ms, senderUsPerName: cpuUs / count, receiverUsPerName: (used.user + used.system) / count, hydrations }
  } finally {
    await b.close()
    await exited
  }
}

async function measure(kind: Kind, count: number): Promise<Measurement[]> {
  const root = await tempDir('concord-bench-cold-')
  try {
    const seeded = join(root.path, 'seed')
    await seed(seeded, kind, count)
    const base = await firstSync(seeded, root.path, 'hold', count)
    const fresh = await firstSync(seeded, root.path, 'stored', count)
    const label = `${count} ${kind === 'pncounter' ? 'counters' : 'Yjs docs'}, sender restarted`
    const baseLabel = 'answers hydrating every name (hold)'
    return [
      {
        name: `${label}: first sync, sender CPU per name`,
        value: fresh.senderUsPerName,
        unit: 'us',
        better: 'lower',
        baseline: { label: baseLabel, value: base.senderUsPerName },
      },
      {
        // The receiver's code is the same in both runs: the baseline is a second sample of it.
        name: `${label}: first sync, receiver CPU per name`,
        value: fresh.receiverUsPerName,
        unit: 'us',
        better: 'lower',
        baseline: { label: baseLabel, value: base.receiverUsPerName },
      },
      {
        name: `${label}: first sync into an empty peer`,
        value: count / (fresh.ms / 1000),
        unit: 'names/s',
        better: 'higher',
        baseline: { label: baseLabel, value: count / (base.ms / 1000) },
        note: `${fresh.ms.toFixed(0)} ms (baseline ${base.ms.toFixed(0)} ms); target ${kind === 'pncounter' ? '20,000' : '5,000'} names/s (issue 15)`,
      },
      {
        name: `${label}: first sync, names the sender hydrated`,
        value: fresh.hydrations,
        unit: 'names',
        better: 'lower',
        baseline: { label: baseLabel, value: base.hydrations },
      },
    ]
  } finally {
    await root.remove()
  }
}

export const benchmarks: Benchmark[] = [
  { name: 'many-names/cold-first-sync/counters', run: () => measure('pncounter', COUNT) },
  { name: 'many-names/cold-first-sync/yjs', run: () => measure('yjs', Math.max(1, Math.floor(COUNT / 10))) },
]
