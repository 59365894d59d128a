/**
 * `npx tsx bench/peers/edit-cpu.ts [count] [intervalMs] [readers] [--prof]`:
 * CPU per edit of a W1 client, split by path (issue 19). One hub, one
 * writer typing `count` characters (one transaction each, every
 * `intervalMs`) and `readers` clients that only receive, each in its own
 * process (bench/peers/main.ts roles), for Concord (sync hub, in-memory
 * peers as clients; `concord-hub-yws-clients`: the same hub serving stock
 * y-websocket clients) and y-websocket (server with y-leveldb, stock clients),
 * interleaved in one run. Prints the writer's CPU per local edit, a
 * reader's per received edit and the hub's per relayed edit (process CPU,
 * user + system, from the start of typing to the last reader's arrival),
 * and the ratios. CPU time is far less sensitive to the machine's load than
 * latency; a reader's CPU is also split by thread (the event loop, and the
 * helpers: V8's GC and compiler threads, the libuv pool). `--prof` writes `.cpuprofile` files of every process (printed
 * folder) for bench/peers/profile-w1.ts's `selfTimes`.
 */
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { tempDir } from '../../test/helpers/temp-dir.ts'
import { monotonicMs, spawnContender, type ContenderProcess } from './child.ts'
import type { ClientRole, HubRole } from './main.ts'

type Contender = 'concord' | 'concord-async' | 'concord-per-change' | 'concord-hub-yws-clients' | 'y-websocket'

/** CPU per edit, µs, of one run. */
interface EditCpu {
  readonly writerUs: number
  readonly readerUs: number
  readonly hubUs: number
  /** The hub store's batches and fsyncs per edit (Concord). */
  readonly hubBatches?: number | undefined
  readonly hubFsyncs?: number | undefined
  /** A reader's CPU per received edit by thread kind, µs (child.ts threadCpuMs: main, helpers). */
  readonly readerThreadsUs: Record<string, number>
}

async function runOnce(contender: Contender, count: number, intervalMs: number, readers: number, profDir?: string): Promise<EditCpu> {
  const dir = await tempDir('concord-bench-edit-cpu-')
  const processes: ContenderProcess[] = []
  const execArgv = (who: string) => (profDir ? ['--cpu-prof', `--cpu-prof-dir=${join(profDir, `${contender}-${who}`)}`] : [])
  try {
    const hubRole: HubRole =
      contender === 'y-websocket'
        ? { kind: 'yws-hub', dir: dir.path }
        : { kind: 'concord-hub', dir: dir.path, durability: contender === 'concord-async' ? 'async' : 'sync' }
    const hub = spawnContender(hubRole, { execArgv: execArgv('hub') })
    processes.push(hub)
    const urls = await hub.request<{ concordUrl?: string; yjsUrl: string }>({ start: true }, 60_000)
    const clients = Array.from({ length: readers + 1 }, (_, i) => {
      const role: ClientRole =
        contender === 'y-websocket' || contender === 'concord-hub-yws-clients'
          ? { kind: 'yws-client', url: urls.yjsUrl, room: 'w1', seed: i + 1 }
          : {
              kind: 'concord-client',
              url: urls.concordUrl!,
              room: 'w1',
              seed: i + 1,
              ...(contender === 'concord-per-change' ? { mergeLocal: 'async' as const } : {}),
            }
      const child = spawnContender(role, { execArgv: execArgv(i === 0 ? 'writer' : `reader-${i}`) })
      processes.push(child)
      return child
    })
    const ids = await Promise.all(clients.map((child) => child.request<{ clientId: number }>({ start: true }, 120_000)))
    await hub.request({ observe: 'w1' })
    const hubAtStart = await hub.request<{ cpuMs: number; durability?: { batches: number; fsyncs: number } }>({ usage: true })
    const at = monotonicMs() + 300
    if (profDir) console.log(`${contender}: typing starts at ${at.toFixed(0)} ms (monotonic)`)
    const typed = await Promise.all(
      clients.map((child, i) => child.request<{ nextClock: number }>({ type: { count: i === 0 ? count : 0, intervalMs, at } }, 600_000)),
    )
    const expect = Object.fromEntries(ids.map(({ clientId }, i) => [clientId, typed[i].nextClock]))
    const received = await Promise.all(
      clients.map((child) => child.request<{ cpuMs: number; length: number; threadsMs: Record<string, number> }>({ await: { expect } }, 600_000)),
    )
    const hubUsage = await hub.request<{ cpuMs: number; durability?: { batches: number; fsyncs: number } }>({ usage: true })
    for (const r of received) if (r.length !== count) throw new Error(`${contender}: a client holds ${r.length} characters, not ${count}`)
    const readerCpu = received.slice(1).reduce((sum, r) => sum + r.cpuMs, 0) / readers
    const readerThreadsUs: Record<string, number> = {}
    for (const r of received.slice(1))
      for (const [kind, ms] of Object.entries(r.threadsMs)) readerThreadsUs[kind] = (readerThreadsUs[kind] ?? 0) + (1000 * ms) / count / readers
    return {
      writerUs: (1000 * received[0].cpuMs) / count,
      readerUs: (1000 * readerCpu) / count,
      hubUs: (1000 * (hubUsage.cpuMs - hubAtStart.cpuMs)) / count,
      readerThreadsUs,
      hubBatches: hubUsage.durability && hubAtStart.durability ? (hubUsage.durability.batches - hubAtStart.durability.batches) / count : undefined,
      hubFsyncs: hubUsage.durability && hubAtStart.durability ? (hubUsage.durability.fsyncs - hubAtStart.durability.fsyncs) / count : undefined,
    }
  } finally {
    await Promise.all(processes.slice(1).map((child) => child.close()))
    await processes[0]?.close()
    await dir.remove()
  }
}

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'))
const count = Number(args[0] ?? 1000)
const intervalMs = Number(args[1] ?? 10)
const readers = Number(args[2] ?? 1)
const contenders = (process.env.CONCORD_EDIT_CPU_CONTENDERS?.split(',') ?? ['concord', 'y-websocket']) as Contender[]
const profDir = process.argv.includes('--prof') ? await mkdtemp(join(tmpdir(), 'concord-edit-cpu-prof-')) : undefined
if (profDir) console.log(`profiles in ${profDir}`)
const results = new Map<Contender, EditCpu>()
for (const contender of contenders) results.set(contender, await runOnce(contender, count, intervalMs, readers, profDir))
const fmt = (us: number) => `${us.toFixed(0)} µs`
console.log(`${count} edits at ${intervalMs} ms, ${readers} reader(s): CPU per edit (process user + system)`)
for (const [contender, r] of results) {
  const store = r.hubBatches === undefined ? '' : `  (hub store: ${r.hubBatches.toFixed(2)} batches, ${r.hubFsyncs!.toFixed(2)} fsyncs per edit)`
  console.log(`  ${contender.padEnd(13)} writer ${fmt(r.writerUs)}  reader ${fmt(r.readerUs)}  hub ${fmt(r.hubUs)}${store}`)
  const threads = Object.entries(r.readerThreadsUs).map(([kind, us]) => `${kind} ${fmt(us)}`)
  if (threads.length > 0) console.log(`  ${''.padEnd(13)} reader by thread: ${threads.join(', ')}`)
}
const concord = results.get('concord')
const yws = results.get('y-websocket')
if (concord && yws) {
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`
  console.log(
    `  concord / y-websocket: writer ${ratio(concord.writerUs, yws.writerUs)}  reader ${ratio(concord.readerUs, yws.readerUs)}  hub ${ratio(concord.hubUs, yws.hubUs)}`,
  )
}
