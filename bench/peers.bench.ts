/**
 * Side by side with the y-websocket server and its stock clients (issue 19),
 * each contender in processes of its own (bench/peers/), run interleaved.
 *
 * - `peers/w1-8x40ms`, `peers/w1-8x10ms` (and `peers/w1-32x40ms` with
 *   `--full`): W1 hub fan-out (bench/peers/w1.ts). Rows: Concord (hub in
 *   sync durability, every edit durable at the hub before it is relayed) and
 *   Concord's hub serving stock y-websocket clients, each against the
 *   y-websocket server (`@y/websocket-server` with y-leveldb, which never
 *   fsyncs) and its stock clients; the Concord hub in async durability
 *   against the same in sync durability; Concord clients with `mergeLocal:
 *   'async'` (one record and one commit per local change of a sync name,
 *   the default before 2026-12-02) against the default (`'all'`).
 *
 * - `peers/w4`: one writer awaiting each of 2,000 small Yjs updates until
 *   durable (a fresh process each, as an agent starts), store in `sync` mode
 *   against classic-level's own `put(sync)`, interleaved in slices of 200,
 *   cold and after 5,000 unmeasured updates each (steady state);
 *   and the fdatasyncs the kernel saw per group commit (bench/peers/w4.ts:
 *   strace -f -c of the same writer, 2,000 updates less 1,000).
 *
 * - `peers/w2-automerge`: first sync of 1,000 small Automerge documents
 *   (10,000 with `--full`) into an empty agent, time and bytes both ways,
 *   against automerge-repo (NodeFS storage, WebSocket), separate processes
 *   (bench/peers/w2.ts). `peers/w2-yjs`: the same for small Yjs documents
 *   against y-websocket clients (one connection per document, y-leveldb on
 *   the client and the server).
 *
 * - `peers/w3`: cold start (open a store of small Yjs documents and read
 *   every one, time and peak RSS) and its disk bytes, against y-leveldb
 *   (bench/peers/w3.ts); 1,000 documents, 10,000 with `--full`.
 *
 * Default: 100 characters per client at 40 ms, 200 at 10 ms, one run of each
 * contender. `--full` (CONCORD_BENCH_FULL=1): 250 and 500 characters, the
 * 32-client row, and the median of 3 interleaved runs.
 */
import type { Benchmark, Measurement } from './harness.ts'
import { median, runW1, type W1Contender, type W1Load, type W1Result } from './peers/w1.ts'
import { runW2, type W2Contender, type W2Result } from './peers/w2.ts'
import { runW3 } from './peers/w3.ts'
import { countSyncs, type SyncCount, w4Rates } from './peers/w4.ts'

const FULL = process.env.CONCORD_BENCH_FULL === '1'
const ROUNDS = Number(process.env.CONCORD_BENCH_PEERS_ROUNDS ?? (FULL ? 3 : 1))
const CONTENDERS: W1Contender[] = ['concord', 'y-websocket', 'concord-hub-yws-clients', 'concord-async', 'concord-per-change']

/** Medians of `ROUNDS` interleaved runs of every contender (the order rotates each round). */
async function interleaved(load: W1Load): Promise<Map<W1Contender, W1Result>> {
  const runs = new Map<W1Contender, W1Result[]>(CONTENDERS.map((c) => [c, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < CONTENDERS.length; i++) {
      const contender = CONTENDERS[(i + round) % CONTENDERS.length]
      runs.get(contender)!.push(await runW1(contender, load))
    }
  }
  const medians = new Map<W1Contender, W1Result>()
  for (const [contender, results] of runs) {
    const of = (key: Exclude<keyof W1Result, 'typingStartedAt' | 'hubResyncs' | 'hubStore'>) => median(results.map((r) => r[key]))
    medians.set(contender, {
      p50: of('p50'),
      p99: of('p99'),
      toHubP50: of('toHubP50'),
      convergeMs: of('convergeMs'),
      samples: of('samples'),
      hubCpuMs: of('hubCpuMs'),
      hubPeakRssMiB: of('hubPeakRssMiB'),
      clientCpuMs: of('clientCpuMs'),
      clientLoopDelayP99Ms: of('clientLoopDelayP99Ms'),
    })
  }
  return medians
}

function w1Rows(load: W1Load, results: Map<W1Contender, W1Result>): Measurement[] {
  const concord = results.get('concord')!
  const yws = results.get('y-websocket')!
  const bridged = results.get('concord-hub-yws-clients')!
  const async = results.get('concord-async')!
  const perChange = results.get('concord-per-change')!
  const label = `${load.clients} clients x ${load.count} chars at ${load.intervalMs} ms`
  const ywsLabel = 'y-websocket server + stock clients'
  const usage = (r: W1Result) =>
    `hub CPU ${(r.hubCpuMs / 1000).toFixed(1)} s, peak RSS ${r.hubPeakRssMiB.toFixed(0)} MiB; clients CPU ${(r.clientCpuMs / 1000).toFixed(1)} s, event-loop delay p99 ${r.clientLoopDelayP99Ms.toFixed(0)} ms`
  return [
    {
      name: `W1 ${label}: p50 edit -> other clients, Concord (sync hub)`,
      value: concord.p50,
      unit: 'ms',
      better: 'lower',
      baseline: { label: ywsLabel, value: yws.p50 },
      target: '<= 1',
      note: `${concord.samples} samples, median of ${ROUNDS}; Concord ${usage(concord)}; y-websocket ${usage(yws)}`,
    },
    {
      name: `W1 ${label}: p99, Concord (sync hub)`,
      value: concord.p99,
      unit: 'ms',
      better: 'lower',
      baseline: { label: ywsLabel, value: yws.p99 },
      target: '<= 1',
    },
    {
      name: `W1 ${label}: converged after the last edit, Concord (sync hub)`,
      value: concord.convergeMs,
      unit: 'ms',
      better: 'lower',
      baseline: { label: ywsLabel, value: yws.convergeMs },
    },
    {
      name: `W1 ${label}: p50, Concord hub (sync) + stock y-websocket clients`,
      value: bridged.p50,
      unit: 'ms',
      better: 'lower',
      baseline: { label: ywsLabel, value: yws.p50 },
      target: '<= 1.2',
      note: `p99 ${bridged.p99.toFixed(1)} ms (y-websocket ${yws.p99.toFixed(1)} ms); converged ${bridged.convergeMs.toFixed(0)} ms after the last edit; ${usage(bridged)}`,
    },
    {
      name: `W1 ${label}: p50, Concord async hub (rpoMs 100)`,
      value: async.p50,
      unit: 'ms',
      better: 'lower',
      baseline: { label: 'Concord sync hub', value: concord.p50 },
      target: '<= 1',
      note: `p99 ${async.p99.toFixed(1)} ms (sync ${concord.p99.toFixed(1)} ms)`,
    },
    {
      name: `W1 ${label}: p50, Concord clients with mergeLocal 'async' (one record per change, the default before 2026-12-02), sync hub`,
      value: perChange.p50,
      unit: 'ms',
      better: 'lower',
      baseline: { label: 'Concord (mergeLocal all, the default)', value: concord.p50 },
      note: `p99 ${perChange.p99.toFixed(1)} ms (default ${concord.p99.toFixed(1)} ms); ${usage(perChange)}`,
    },
  ]
}

function w1Benchmark(load: W1Load): Benchmark {
  return {
    name: `peers/w1-${load.clients}x${load.intervalMs}ms`,
    async run() {
      return w1Rows(load, await interleaved(load))
    },
  }
}

const W3_DOCS = FULL ? 10_000 : 1000

const w3: Benchmark = {
  name: 'peers/w3',
  async run(): Promise<Measurement[]> {
    const { store, 'y-leveldb': yLeveldb } = await runW3(W3_DOCS, Math.max(ROUNDS, 1))
    const label = `${W3_DOCS} small Yjs documents (3 updates each)`
    return [
      {
        name: `W3 cold start: open the store and read every document, ${label}`,
        value: store.ms,
        unit: 'ms',
        better: 'lower',
        baseline: { label: 'y-leveldb getYDoc of each', value: yLeveldb.ms },
        target: '<= 1',
        note: `fresh processes, median of ${Math.max(ROUNDS, 1)}; CPU ${Math.round(store.cpuMs)} ms vs ${Math.round(yLeveldb.cpuMs)} ms (${(store.cpuMs / yLeveldb.cpuMs).toFixed(2)}x)`,
      },
      {
        name: `W3 cold start: peak RSS of the reading process, ${label}`,
        value: store.peakRssMiB,
        unit: 'MiB',
        better: 'lower',
        baseline: { label: 'y-leveldb', value: yLeveldb.peakRssMiB },
        target: '<= 1',
      },
      {
        name: `disk after close, ${label}, full history kept`,
        value: store.bytes,
        unit: 'bytes',
        better: 'lower',
        baseline: { label: 'y-leveldb', value: yLeveldb.bytes },
        target: '<= 1.5',
        note: `once LevelDB compacted each folder (compactRange, reopen: live data only) ${store.compactedBytes} vs ${yLeveldb.compactedBytes} bytes (${(store.compactedBytes / yLeveldb.compactedBytes).toFixed(2)}x)`,
      },
    ]
  },
}

const W2_DOCS = FULL ? 10_000 : 1000

/** W2 for one document type: Concord against the peer that syncs that type, interleaved, `ROUNDS` each. */
function w2Benchmark(spec: {
  readonly name: string
  readonly concord: W2Contender
  readonly peer: W2Contender
  readonly label: string
  readonly peerLabel: string
  readonly catchupPeerLabel: string
}): Benchmark {
  return {
    name: spec.name,
    async run(): Promise<Measurement[]> {
      const runs = new Map<W2Contender, W2Result[]>([
        [spec.concord, []],
        [spec.peer, []],
      ])
      for (let round = 0; round < ROUNDS; round++) {
        for (const kind of round % 2 === 0 ? [spec.concord, spec.peer] : [spec.peer, spec.concord]) runs.get(kind)!.push(await runW2(kind, W2_DOCS))
      }
      const of = (kind: W2Contender, key: keyof W2Result) => median(runs.get(kind)!.map((r) => r[key]))
      const bytes = (kind: W2Contender) => of(kind, 'bytesUp') + of(kind, 'bytesDown')
      const cpu = (kind: W2Contender) => `client CPU ${(of(kind, 'clientCpuMs') / 1000).toFixed(1)} s, hub CPU ${(of(kind, 'hubCpuMs') / 1000).toFixed(1)} s`
      const [concord, peer] = [spec.concord, spec.peer]
      const retried = peer === 'automerge-repo' ? `, ${of(peer, 'retries')} finds retried after "unavailable"` : ''
      return [
        {
          name: `W2 first sync, ${spec.label}: time`,
          value: of(concord, 'ms'),
          unit: 'ms',
          better: 'lower',
          baseline: { label: spec.peerLabel, value: of(peer, 'ms') },
          target: '<= 1',
          note: `separate processes, median of ${ROUNDS}; Concord ${cpu(concord)} (client in sync durability); ${peer} ${cpu(peer)}${retried}`,
        },
        {
          name: `W2 first sync, ${spec.label}: bytes on the wire both ways`,
          value: bytes(concord),
          unit: 'bytes',
          better: 'lower',
          baseline: { label: spec.peerLabel, value: bytes(peer) },
          target: '<= 1',
          note: `counted by a TCP proxy (WebSocket framing included); up/down Concord ${of(concord, 'bytesUp')}/${of(concord, 'bytesDown')}, ${peer} ${of(peer, 'bytesUp')}/${of(peer, 'bytesDown')}`,
        },
        {
          name: `W2 catch-up after 10 of the ${W2_DOCS} ${spec.concord === 'concord' ? 'Automerge' : 'Yjs'} documents changed on the hub: time until the client holds every change`,
          value: of(concord, 'catchupMs'),
          unit: 'ms',
          better: 'lower',
          baseline: { label: spec.catchupPeerLabel, value: of(peer, 'catchupMs') },
          target: '<= 1',
          note: `bytes both ways ${of(concord, 'catchupBytes')} vs ${of(peer, 'catchupBytes')} (${(of(concord, 'catchupBytes') / of(peer, 'catchupBytes')).toFixed(2)}x); the client a new process on its folder${of(peer, 'catchupMissed') > 0 ? `; ${peer}: ${of(peer, 'catchupMissed')} of the 10 changes had not arrived when it stopped waiting (its time is that limit)` : ''}`,
        },
      ]
    },
  }
}

const w2 = w2Benchmark({
  name: 'peers/w2-automerge',
  concord: 'concord',
  peer: 'automerge-repo',
  label: `${W2_DOCS} small Automerge documents (11 changes each) into an empty agent`,
  peerLabel: 'automerge-repo 2.5.6 (NodeFS, WebSocket; finds every URL)',
  catchupPeerLabel: 'automerge-repo 2.5.6 (finds every URL again)',
})

const w2Yjs = w2Benchmark({
  name: 'peers/w2-yjs',
  concord: 'concord-yjs',
  peer: 'y-websocket',
  label: `${W2_DOCS} small Yjs documents (11 changes each) into an empty agent`,
  peerLabel: 'y-websocket 3.1.0 clients, one connection per document, y-leveldb on both sides (@y/websocket-server 0.1.1)',
  catchupPeerLabel: 'y-websocket (each document loaded from y-leveldb, one connection each)',
})

const W4_UPDATES = 2000
/** Unmeasured slices each W4 contender writes first, for the steady-state row. */
const W4_WARMUP_SLICES = 25

const w4: Benchmark = {
  name: 'peers/w4',
  async run(): Promise<Measurement[]> {
    const cold: Array<{ store: number; levelPut: number }> = []
    const warm: Array<{ store: number; levelPut: number }> = []
    for (let round = 0; round < ROUNDS; round++) {
      cold.push(await w4Rates(10, W4_UPDATES / 10, 0))
      warm.push(await w4Rates(10, W4_UPDATES / 10, W4_WARMUP_SLICES))
    }
    const rows: Measurement[] = [
      {
        name: `W4 1 writer, ${W4_UPDATES} small Yjs updates each awaited until durable (sync mode)`,
        value: median(cold.map((r) => r.store)),
        unit: 'ops/s',
        better: 'higher',
        baseline: { label: 'classic-level put(sync) alone, same slices', value: median(cold.map((r) => r.levelPut)) },
        target: '>= 0.9',
        note: `fresh processes, 10 interleaved slices of ${W4_UPDATES / 10}, median of ${ROUNDS}`,
      },
      {
        name: `W4 the same after ${(W4_WARMUP_SLICES * W4_UPDATES) / 10} unmeasured updates in each process (steady state)`,
        value: median(warm.map((r) => r.store)),
        unit: 'ops/s',
        better: 'higher',
        baseline: { label: 'classic-level put(sync) alone, same warm-up', value: median(warm.map((r) => r.levelPut)) },
        target: '>= 0.9',
        note: `fresh processes, warmed alike (a cold store is mostly V8 compiling its write path), 10 interleaved slices of ${W4_UPDATES / 10}, median of ${ROUNDS}`,
      },
    ]
    // The marginal syncs of 1,000 more updates: open, close and its checkpoint cancel out.
    const [storeRun, storeHalf, levelRun, levelHalf] = [
      await countSyncs('store', W4_UPDATES),
      await countSyncs('store', W4_UPDATES / 2),
      await countSyncs('level-put', W4_UPDATES),
      await countSyncs('level-put', W4_UPDATES / 2),
    ]
    if (storeRun && storeHalf && levelRun && levelHalf) {
      const syncs = (run: SyncCount) => run.fdatasync + run.fsync
      const commits = storeRun.groupCommits - storeHalf.groupCommits
      const storeSyncs = syncs(storeRun) - syncs(storeHalf)
      const levelSyncs = syncs(levelRun) - syncs(levelHalf)
      rows.push({
        name: 'W4 fdatasync+fsync per durable group commit (the last 1,000 of 2,000 updates)',
        value: storeSyncs / Math.max(1, commits),
        unit: 'syncs',
        better: 'lower',
        baseline: { label: 'classic-level put(sync), per put', value: levelSyncs / (levelRun.groupCommits - levelHalf.groupCommits) },
        target: '<= 1',
        note: `counted by strace -f -c: ${storeSyncs} syncs for ${commits} group commits of ${W4_UPDATES / 2} updates; whole run ${syncs(storeRun)} for ${storeRun.groupCommits} (open and close included); loop CPU ${(storeRun.cpuMs / W4_UPDATES).toFixed(2)} ms per update (put(sync): ${(levelRun.cpuMs / W4_UPDATES).toFixed(2)} ms)`,
      })
    }
    return rows
  },
}

export const benchmarks: Benchmark[] = [
  w1Benchmark({ clients: 8, count: FULL ? 250 : 100, intervalMs: 40, warmup: 10 }),
  w1Benchmark({ clients: 8, count: FULL ? 500 : 200, intervalMs: 10, warmup: 20 }),
  ...(FULL ? [w1Benchmark({ clients: 32, count: 250, intervalMs: 40, warmup: 10 })] : []),
  w4,
  w3,
  w2,
  w2Yjs,
]
