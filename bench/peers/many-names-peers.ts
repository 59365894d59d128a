/**
 * The peer columns of bench/many-names.bench.ts: the same document counts
 * synced by y-websocket and automerge-repo, beside Concord run the same way.
 * Every contender runs W2's machinery (bench/peers/w2.ts): a hub process
 * that creates and serves the documents, an empty client process that takes
 * them all through a TCP proxy counting the bytes both ways (WebSocket
 * framing included), then, after the hub changed 10 documents spread over
 * the range, the client back as a new process on its folder. What each
 * contender's documents hold is in bench/peers/w2-workloads.ts (`counter`,
 * `text`). Concord is measured in that harness too (its rows' values), at
 * each peer's count, so that every ratio compares the same count, processes
 * and byte counting; the in-process rows of many-names stay as they are.
 *
 * A peer runs at most `cap` documents (its own size cap; y-websocket also
 * at most the connections the counting proxy can hold open, see
 * `proxyConnectionLimit`): at larger counts the rows say the count used and
 * why, beside Concord at that count; nothing is extrapolated.
 */
import type { Measurement } from '../harness.ts'
import { proxyConnectionLimit, runW2, type W2Contender, type W2Result } from './w2.ts'
import type { WorkloadName } from './w2-workloads.ts'

/** One peer and how many documents it runs. */
export interface PeerRun {
  readonly peer: 'y-websocket' | 'automerge-repo'
  readonly cap: number
  /** The environment variable that sets `cap`, for the labels. */
  readonly capVariable: string
}

/** What each side of a comparison holds: a short form for the labels, the whole for the notes. */
const HOLDS: Record<'counter' | 'yjs', Record<'concord' | PeerRun['peer'], { short: string; long: string }>> = {
  counter: {
    concord: { short: 'PN-counters', long: 'PN-counters incremented once, once more as the change' },
    'y-websocket': {
      short: 'Yjs docs holding n = 1',
      long: 'Yjs docs each holding a map c with n = 1 (Yjs has no counter, this is the nearest), n set to 2 as the change',
    },
    'automerge-repo': {
      short: 'Automerge docs holding one Counter',
      long: 'Automerge docs each { n: Counter(1) } (repo.create with that value), incremented as the change',
    },
  },
  yjs: {
    concord: { short: 'Yjs docs', long: "Yjs docs each a text 'r0 ', 'r1 ' inserted at 0 as the change" },
    'y-websocket': { short: 'Yjs docs', long: "Yjs docs each a text 'r0 ', 'r1 ' inserted at 0 as the change" },
    'automerge-repo': {
      short: 'Automerge docs holding a short text',
      long: "Automerge docs each { t: 'r0 ' } (repo.create with that value; a text), 'r1 ' spliced in at 0 as the change",
    },
  },
}

const PEER_LABEL: Record<PeerRun['peer'], { short: string; long: string }> = {
  'y-websocket': {
    short: 'y-websocket',
    long: 'y-websocket 3.1.0 clients, one connection per document, y-leveldb on both sides (@y/websocket-server 0.1.1)',
  },
  'automerge-repo': { short: 'automerge-repo 2.5.6', long: 'automerge-repo 2.5.6 (NodeFS storage, WebSocket network; the client finds every URL)' },
}

/**
 * Runs Concord and each peer of `peers` on `min(count, cap)` documents of
 * the kind (`counter`: PN-counters; `yjs`: short Yjs texts), each count's
 * Concord run first and every contender in its own processes, and returns
 * the rows: create rate, first sync rate and bytes, reconnect time and bytes,
 * each Concord's against the peer's.
 */
export async function peerRows(kind: 'counter' | 'yjs', count: number, peers: readonly PeerRun[]): Promise<Measurement[]> {
  const workload: WorkloadName = kind === 'counter' ? 'counter' : 'text'
  const concordKind: W2Contender = kind === 'counter' ? 'concord' : 'concord-yjs'
  const concordAt = new Map<number, W2Result>()
  const rows: Measurement[] = []
  for (const { peer, cap, capVariable } of peers) {
    // One connection per document through the counting proxy: y-websocket is capped by the process's open files too.
    const fits = peer === 'y-websocket' ? proxyConnectionLimit() : Number.POSITIVE_INFINITY
    const docs = Math.min(count, cap, fits)
    const capName = fits < Math.min(count, cap) ? "the proxy's open files, ulimit -n" : capVariable
    if (docs <= 0) continue
    if (!concordAt.has(docs)) concordAt.set(docs, await runW2(concordKind, docs, workload))
    const concord = concordAt.get(docs)!
    const other = await runW2(peer, docs, workload)
    rows.push(...comparison(kind, count, docs, peer, concord, other, capName))
  }
  return rows
}

/**
 * Concord alone at the full `count`, hub and client each a process of its
 * own as in the peer columns (its first sync row; the reconnect is in them) (the realistic setup: two agents, two
 * processes): the first sync's names/s against the issue's target. The
 * in-process rows of many-names run both peers on one thread, so there
 * the first sync costs the sum of both sides' CPU.
 */
export async function ownProcessesRows(kind: 'counter' | 'yjs', count: number): Promise<Measurement[]> {
  const result = await runW2(kind === 'counter' ? 'concord' : 'concord-yjs', count, kind === 'counter' ? 'counter' : 'text')
  const label = `${count} ${kind === 'counter' ? 'counters' : 'Yjs docs'}, hub and client own processes`
  const target = kind === 'counter' ? 20_000 : 5_000
  return [
    {
      name: `${label}: first sync into an empty peer`,
      value: count / (result.ms / 1000),
      unit: 'names/s',
      better: 'higher',
      note: `${result.ms.toFixed(0)} ms; client CPU ${(result.clientCpuMs / 1000).toFixed(1)} s, hub CPU ${(result.hubCpuMs / 1000).toFixed(1)} s; client peak RSS ${result.clientPeakRssMiB.toFixed(0)} MiB; ${((result.bytesUp + result.bytesDown) / 1024).toFixed(0)} KiB both ways; target >= ${target} names/s (issue 15)`,
    },
  ]
}

function comparison(
  kind: 'counter' | 'yjs',
  count: number,
  docs: number,
  peer: PeerRun['peer'],
  concord: W2Result,
  other: W2Result,
  capVariable: string,
): Measurement[] {
  const holds = HOLDS[kind]
  const capped = docs < count ? ` (peer cap, ${capVariable}: ${docs} of ${count})` : ''
  const label = `${docs} ${kind === 'counter' ? 'counters' : 'Yjs docs'}${capped} vs ${PEER_LABEL[peer].short}, own processes`
  const baseline = (value: number) => ({ label: `${PEER_LABEL[peer].short}, ${docs} ${holds[peer].short}`, value })
  const rate = (ms: number) => docs / (ms / 1000)
  const bytes = (result: W2Result) => result.bytesUp + result.bytesDown
  const cpu = (result: W2Result) => `client CPU ${(result.clientCpuMs / 1000).toFixed(1)} s, hub CPU ${(result.hubCpuMs / 1000).toFixed(1)} s`
  const retried = peer === 'automerge-repo' ? `, ${other.retries} finds retried after "unavailable"` : ''
  return [
    {
      name: `${label}: create (hub, until stored)`,
      value: rate(concord.createMs),
      unit: 'names/s',
      better: 'higher',
      baseline: baseline(rate(other.createMs)),
      note: `Concord: ${docs} ${holds.concord.long} (openMany 1,000 at a time, async, cacheSize 256); ${PEER_LABEL[peer].long}: ${docs} ${holds[peer].long}; hub and client each a process of their own, bytes through a TCP proxy (bench/peers/w2.ts); ${concord.createMs.toFixed(0)} ms vs ${other.createMs.toFixed(0)} ms`,
    },
    {
      name: `${label}: first sync into an empty peer`,
      value: rate(concord.ms),
      unit: 'names/s',
      better: 'higher',
      baseline: baseline(rate(other.ms)),
      note: `${concord.ms.toFixed(0)} ms vs ${other.ms.toFixed(0)} ms; Concord ${cpu(concord)}; ${peer} ${cpu(other)}${retried}`,
    },
    {
      name: `${label}: first sync, bytes both ways`,
      value: bytes(concord),
      unit: 'bytes',
      better: 'lower',
      baseline: baseline(bytes(other)),
      note: `counted by a TCP proxy (WebSocket framing included); up/down Concord ${concord.bytesUp}/${concord.bytesDown}, ${peer} ${other.bytesUp}/${other.bytesDown}`,
    },
    {
      name: `${label}: reconnect after 10 changed, time`,
      value: concord.catchupMs,
      unit: 'ms',
      better: 'lower',
      baseline: baseline(other.catchupMs),
      note: `${other.catchupMissed > 0 ? `${peer} DID NOT CATCH UP: ${other.catchupMissed} of the 10 changes had not arrived when it stopped waiting, its time is that limit; ` : ''}the client a new process on its folder, Concord timed from just after its store opened, the peer from before its storage opens, until the client holds the 10 changes${peer === 'y-websocket' ? ' (y-websocket: every doc loaded from y-leveldb, one connection each)' : ' (automerge-repo: every URL found again)'}`,
    },
    {
      name: `${label}: reconnect after 10 changed, bytes both ways`,
      value: concord.catchupBytes,
      unit: 'bytes',
      better: 'lower',
      baseline: baseline(other.catchupBytes),
    },
  ]
}
