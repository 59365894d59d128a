/**
 * W1, hub fan-out: `clients` agents, each in its own process, connected to
 * one hub (its own process too), all typing into one Yjs text (`count`
 * characters each, one transaction per character, at a random position,
 * every `intervalMs`, all starting together). Measured: the latency from an
 * edit to its arrival at each other client (p50, p99 over every edit and
 * receiver, the first `warmup` edits of each client left out), and the time
 * from the last edit anywhere until every client holds every edit. Every
 * client's text must end equal (digest).
 *
 * Arrival is read from the receiving Y.Doc's transactions (`afterState`
 * against `beforeState`: the clocks a transaction integrated), send time
 * from the sender's clock before each edit; both on the machine's
 * monotonic clock, which every process shares.
 */
import { tempDir } from '../../test/helpers/temp-dir.ts'
import { monotonicMs, spawnContender, type ContenderProcess } from './child.ts'
import type { ClientRole, HubRole } from './main.ts'

/** Who serves and who types. */
export type W1Contender =
  /** Concord hub (LevelDB, sync durability) and Concord clients (in-memory peers). */
  | 'concord'
  /** The same with the hub in async durability (rpoMs 100). */
  | 'concord-async'
  /** Concord with clients that log one record per local change (`mergeLocal: 'async'`, the default before 2026-12-02). */
  | 'concord-per-change'
  /** `@y/websocket-server` with y-leveldb, stock y-websocket clients. */
  | 'y-websocket'
  /** Concord hub (sync durability) serving stock y-websocket clients at /yjs. */
  | 'concord-hub-yws-clients'

export interface W1Load {
  readonly clients: number
  readonly count: number
  readonly intervalMs: number
  readonly warmup: number
}

export interface W1Result {
  readonly p50: number
  readonly p99: number
  /** p50 from an edit to its application at the hub's document, ms. */
  readonly toHubP50: number
  readonly convergeMs: number
  readonly samples: number
  /** CPU the hub used from the start of typing to convergence, ms. */
  readonly hubCpuMs: number
  readonly hubPeakRssMiB: number
  /** CPU the clients used from the start of typing to convergence, ms, summed. */
  readonly clientCpuMs: number
  /** The clients' event-loop delay while typing, p99 (median over clients), ms. */
  readonly clientLoopDelayP99Ms: number
  /** When typing began (monotonic ms), for profiles. */
  readonly typingStartedAt?: number
  /** A Concord hub's store: batches written and fsyncs per edit typed, from the start of typing to convergence. */
  readonly hubStore?: { readonly batchesPerEdit: number; readonly fsyncsPerEdit: number }
  /** A Concord hub's session totals that mean resyncs (gaps, queue overflows, VERSIONS, answers). */
  readonly hubResyncs?: Readonly<Record<string, number>>
}

/** Node flags of the hub and of the clients (e.g. `--cpu-prof`), for profiling runs. */
export interface W1Options {
  readonly hubExecArgv?: string[]
  readonly clientExecArgv?: string[]
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[index]
}

/** The median of `values`. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** One W1 run of `contender` under `load`. */
export async function runW1(contender: W1Contender, load: W1Load, options: W1Options = {}): Promise<W1Result> {
  const dir = await tempDir('concord-bench-w1-')
  const processes: ContenderProcess[] = []
  try {
    const hubRole: HubRole =
      contender === 'y-websocket'
        ? { kind: 'yws-hub', dir: dir.path }
        : { kind: 'concord-hub', dir: dir.path, durability: contender === 'concord-async' ? 'async' : 'sync' }
    const hub = spawnContender(hubRole, { execArgv: options.hubExecArgv })
    processes.push(hub)
    const urls = await hub.request<{ concordUrl?: string; yjsUrl: string }>({ start: true }, 60_000)
    const concordClients = contender === 'concord' || contender === 'concord-async' || contender === 'concord-per-change'
    const clients = Array.from({ length: load.clients }, (_, i) => {
      const role: ClientRole = concordClients
        ? {
            kind: 'concord-client',
            url: urls.concordUrl!,
            room: 'w1',
            seed: i + 1,
            ...(contender === 'concord-per-change' ? { mergeLocal: 'async' as const } : {}),
          }
        : { kind: 'yws-client', url: urls.yjsUrl, room: 'w1', seed: i + 1 }
      const child = spawnContender(role, { execArgv: options.clientExecArgv })
      processes.push(child)
      return child
    })
    const ids = await Promise.all(clients.map((child) => child.request<{ clientId: number }>({ start: true }, 120_000)))
    await hub.request({ observe: 'w1' })
    type StoreDurability = { batches: number; fsyncs: number }
    const hubAtStart = await hub.request<{ cpuMs: number; durability?: StoreDurability }>({ usage: true })
    const at = monotonicMs() + 300
    const typed = await Promise.all(
      clients.map((child) =>
        child.request<{ clocks: number[]; times: number[]; nextClock: number }>({ type: { count: load.count, intervalMs: load.intervalMs, at } }, 600_000),
      ),
    )
    const expect = Object.fromEntries(ids.map(({ clientId }, i) => [clientId, typed[i].nextClock]))
    const received = await Promise.all(
      clients.map((child) =>
        child.request<{ arrivals: Record<string, number[]>; length: number; digest: string; cpuMs: number; loopDelayP99Ms: number }>(
          { await: { expect } },
          600_000,
        ),
      ),
    )
    const digests = new Set(received.map((r) => r.digest))
    if (digests.size !== 1) throw new Error(`W1 ${contender}: the clients' texts differ (${[...digests].join(', ')})`)
    if (received[0].length !== load.clients * load.count)
      throw new Error(`W1 ${contender}: the text has ${received[0].length} characters, not ${load.clients * load.count}`)
    const latencies: number[] = []
    let lastEdit = 0
    let lastArrival = 0
    for (let s = 0; s < clients.length; s++) {
      const { clocks, times } = typed[s]
      lastEdit = Math.max(lastEdit, times[times.length - 1])
      for (let r = 0; r < clients.length; r++) {
        if (r === s) continue
        const arrivals = received[r].arrivals[String(ids[s].clientId)]
        for (let k = 0; k < clocks.length; k++) {
          const arrived = arrivals[clocks[k]]
          lastArrival = Math.max(lastArrival, arrived)
          if (k >= load.warmup) latencies.push(arrived - times[k])
        }
      }
    }
    latencies.sort((a, b) => a - b)
    const atHub = (await hub.request<{ arrivals: Record<string, number[]> }>({ arrivals: true })).arrivals
    const toHub: number[] = []
    for (let s = 0; s < clients.length; s++) {
      const { clocks, times } = typed[s]
      const arrivals = atHub[String(ids[s].clientId)] ?? []
      for (let k = load.warmup; k < clocks.length; k++) if (arrivals[clocks[k]] !== undefined) toHub.push(arrivals[clocks[k]] - times[k])
    }
    toHub.sort((a, b) => a - b)
    const hubUsage = await hub.request<{ cpuMs: number; peakRssMiB: number; durability?: StoreDurability; sessions?: Record<string, number> }>({
      usage: true,
    })
    const edits = load.clients * load.count
    const hubSessions = hubUsage.sessions
    return {
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      toHubP50: percentile(toHub, 50),
      convergeMs: Math.max(0, lastArrival - lastEdit),
      samples: latencies.length,
      hubCpuMs: hubUsage.cpuMs - hubAtStart.cpuMs,
      hubPeakRssMiB: hubUsage.peakRssMiB,
      clientCpuMs: received.reduce((sum, r) => sum + r.cpuMs, 0),
      clientLoopDelayP99Ms: median(received.map((r) => r.loopDelayP99Ms)),
      typingStartedAt: at,
      ...(hubUsage.durability && hubAtStart.durability
        ? {
            hubStore: {
              batchesPerEdit: (hubUsage.durability.batches - hubAtStart.durability.batches) / edits,
              fsyncsPerEdit: (hubUsage.durability.fsyncs - hubAtStart.durability.fsyncs) / edits,
            },
          }
        : {}),
      // What the hub's sessions did besides relaying (resyncs under load show here).
      ...(hubSessions
        ? {
            hubResyncs: {
              gaps: hubSessions.gaps,
              overflows: hubSessions.overflows,
              versionsSent: hubSessions.versionsSent,
              resyncRetries: hubSessions.resyncRetries,
              answerRecords: hubSessions.answerRecords,
              answerMerged: hubSessions.answerMerged,
              duplicates: hubSessions.duplicates,
            },
          }
        : {}),
    }
  } finally {
    await Promise.all(processes.slice(1).map((child) => child.close()))
    await processes[0]?.close()
    await dir.remove()
  }
}
