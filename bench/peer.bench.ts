/**
 * Whole peers (`createPeer`: store + sync sessions) over WebSocket on
 * 127.0.0.1, against the same work without network or store.
 *
 * - `peer/16-peers-converge`: 16 peers (in-memory stores, `sync` mode), a
 *   hub and 15 spokes; every peer writes 10,000 operations (alternately a
 *   shared PN-counter increment and an add of its own element to a shared
 *   add-wins set), each its own commit, while connected; the clock stops when
 *   every peer holds all 160,000. Baseline: the same 160,000 operations made
 *   on 16 in-memory replicas per name, every delta joined into the 15 other
 *   replicas (what the peers do, minus network, protocol and store).
 * - `peer/yjs-trace-live`: the automerge-paper trace (259,778 single-character
 *   edits) typed into one peer's Yjs document, each edit its own transaction,
 *   persisted on LevelDB in `async` mode (rpoMs 100) and synced live over
 *   WebSocket to a second peer (LevelDB too) whose text must equal
 *   `endContent`; the clock stops when it does. Baseline: bare Yjs replaying
 *   the trace in memory (target <= 2x); and bare Yjs doing both peers' work
 *   (typed, and applied live to a second document every 256 edits).
 *
 * CONCORD_BENCH_PEER_OPS changes the 10,000 (quick runs).
 */
import { join } from 'node:path'
import * as Y from 'yjs'
import { createReplica } from '../crdt/registry.ts'
import type { Replica } from '../crdt/replica.ts'
import { agentId } from '../crdt/agent-id.ts'
import type { ORSetReplica, PNCounterReplica } from '../crdt/types/index.ts'
import { createPeer, type Peer } from '../peer/index.ts'
import { loadTrace } from '../test/crdt/documents/traces.ts'
import { tempDir } from '../test/helpers/temp-dir.ts'
import type { Benchmark, Measurement } from './harness.ts'

const PEERS = 16
const OPS = Number(process.env.CONCORD_BENCH_PEER_OPS ?? 10_000)

function now(): number {
  return Number(process.hrtime.bigint()) / 1e6
}

/** Resolves when `done()` holds (polled); rejects after `timeoutMs`. */
async function until(done: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** A turn of the event loop, so sockets and the store make progress while a peer writes. */
const yieldToIo = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

async function sixteenPeers(): Promise<{ ms: number; frames: number; bytes: number }> {
  const peers: Peer[] = []
  try {
    for (let i = 0; i < PEERS; i++) peers.push(await createPeer({ agentId: `peer-${i}` }))
    const [hub, ...spokes] = peers
    const { url } = await hub.listen()
    await Promise.all(spokes.map((spoke) => spoke.connect(url)))
    const counters: PNCounterReplica[] = []
    const sets: Array<ORSetReplica<string>> = []
    for (const peer of peers) {
      counters.push(await peer.counter('ops'))
      sets.push(await peer.set<string>('items'))
    }
    const increments = PEERS * Math.ceil(OPS / 2)
    const adds = PEERS * Math.floor(OPS / 2)
    const start = now()
    await Promise.all(
      peers.map(async (_peer, p) => {
        for (let i = 0; i < OPS; i++) {
          if (i % 2 === 0) counters[p].increment()
          else sets[p].add(`${p}:${i}`)
          if (i % 64 === 63) await yieldToIo()
        }
      }),
    )
    await until(() => counters.every((c) => c.value() === increments) && sets.every((s) => s.size === adds), '16 peers to converge', 600_000)
    const ms = now() - start
    let frames = 0
    let bytes = 0
    for (const peer of peers) {
      const { totals } = peer.stats()
      frames += totals.framesOut
      bytes += totals.bytesOut
    }
    return { ms, frames, bytes }
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
  }
}

/** The same operations on in-memory replicas: each replica's deltas joined into the 15 others. */
function sixteenReplicas(): number {
  const start = now()
  const counters: Replica[] = []
  const sets: Replica[] = []
  for (let p = 0; p < PEERS; p++) {
    counters.push(createReplica('pncounter', { agentId: agentId(`peer-${p}`) }))
    sets.push(createReplica('orset', { agentId: agentId(`peer-${p}`) }))
  }
  for (let p = 0; p < PEERS; p++) {
    const counter = counters[p] as PNCounterReplica
    const set = sets[p] as ORSetReplica<string>
    // Each local change's delta, from its change event, joined into the 15 others.
    const offCounter = counter.on('change', ({ delta }) => {
      for (let q = 0; q < PEERS; q++) if (q !== p) counters[q].applyDelta(delta)
    })
    const offSet = set.on('change', ({ delta }) => {
      for (let q = 0; q < PEERS; q++) if (q !== p) sets[q].applyDelta(delta)
    })
    for (let i = 0; i < OPS; i++) {
      if (i % 2 === 0) counter.increment()
      else set.add(`${p}:${i}`)
    }
    offCounter()
    offSet()
  }
  const increments = PEERS * Math.ceil(OPS / 2)
  if (!counters.every((c) => c.value() === increments)) throw new Error('baseline counters do not match')
  return now() - start
}

type Edit = [number, number, string]

function bareYjs(edits: readonly Edit[], endContent: string): number {
  const start = now()
  const doc = new Y.Doc()
  const text = doc.getText('text')
  for (const [pos, del, ins] of edits) {
    if (del > 0) text.delete(pos, del)
    if (ins) text.insert(pos, ins)
  }
  const ms = now() - start
  if (text.toString() !== endContent) throw new Error('bare Yjs: the text does not match endContent')
  return ms
}

/**
 * Bare Yjs doing what the two peers do in this process, minus store and
 * network: the trace typed into one document, each update applied live to
 * a second (batched as the peers' turns are: every 256 edits).
 */
function bareYjsLive(edits: readonly Edit[], endContent: string): number {
  const start = now()
  const doc = new Y.Doc()
  const second = new Y.Doc()
  let pending: Uint8Array[] = []
  doc.on('update', (update: Uint8Array) => pending.push(update))
  const text = doc.getText('text')
  for (let i = 0; i < edits.length; i++) {
    const [pos, del, ins] = edits[i]
    if (del > 0) text.delete(pos, del)
    if (ins) text.insert(pos, ins)
    if (i % 256 === 255 || i === edits.length - 1) {
      Y.applyUpdate(second, Y.mergeUpdates(pending))
      pending = []
    }
  }
  const ms = now() - start
  if (second.getText('text').toString() !== endContent) throw new Error('bare Yjs live: the second document does not match endContent')
  return ms
}

async function peerYjs(edits: readonly Edit[], endContent: string): Promise<{ ms: number; typedMs: number; frames: number }> {
  const dir = await tempDir('concord-bench-peer-')
  const peers: Peer[] = []
  try {
    const writer = await createPeer({ agentId: 'writer', dir: join(dir.path, 'writer'), durability: { mode: 'async', rpoMs: 100 } })
    peers.push(writer)
    const reader = await createPeer({ agentId: 'reader', dir: join(dir.path, 'reader'), durability: { mode: 'async', rpoMs: 100 } })
    peers.push(reader)
    const { url } = await writer.listen()
    await reader.connect(url)
    const source = await writer.yjs('paper')
    const sink = await reader.yjs('paper')
    const sinkText = sink.doc.getText('text')
    const start = now()
    const text = source.doc.getText('text')
    for (let i = 0; i < edits.length; i++) {
      const [pos, del, ins] = edits[i]
      if (del > 0) text.delete(pos, del)
      if (ins) text.insert(pos, ins)
      if (i % 256 === 255) await yieldToIo()
    }
    const typedMs = now() - start
    await until(() => sinkText.length === endContent.length && sinkText.toString() === endContent, 'the second peer to hold endContent', 600_000)
    const ms = now() - start
    if (text.toString() !== endContent) throw new Error('writer: the text does not match endContent')
    return { ms, typedMs, frames: writer.stats().totals.framesOut }
  } finally {
    await Promise.all(peers.map((peer) => peer.close()))
    await dir.remove()
  }
}

export const benchmarks: Benchmark[] = [
  {
    name: 'peer/16-peers-converge',
    async run(): Promise<Measurement[]> {
      const total = PEERS * OPS
      const baselineMs = sixteenReplicas()
      const result = await sixteenPeers()
      const baselineOps = total / (baselineMs / 1000)
      return [
        {
          name: `${PEERS} peers x ${OPS} ops over WebSocket: time to converge`,
          value: result.ms,
          unit: 'ms',
          better: 'lower',
          baseline: { label: 'in-memory replicas, no network', value: baselineMs },
          note: `hub and ${PEERS - 1} spokes, in-memory stores (sync mode); ${result.frames} frames, ${(result.bytes / 1048576).toFixed(1)} MiB sent`,
        },
        {
          name: `${PEERS} peers x ${OPS} ops over WebSocket: throughput`,
          value: total / (result.ms / 1000),
          unit: 'ops/s',
          better: 'higher',
          baseline: { label: 'in-memory replicas, no network', value: baselineOps },
        },
      ]
    },
  },
  {
    name: 'peer/yjs-trace-live',
    async run(): Promise<Measurement[]> {
      const trace = loadTrace('automerge-paper')
      const edits = trace.txns.map((txn) => txn.patches[0] as Edit)
      const bare = Math.min(bareYjs(edits, trace.endContent), bareYjs(edits, trace.endContent))
      const bareLive = Math.min(bareYjsLive(edits, trace.endContent), bareYjsLive(edits, trace.endContent))
      const result = await peerYjs(edits, trace.endContent)
      return [
        {
          name: `automerge-paper (${edits.length} edits) typed into a peer, async LevelDB, live to a 2nd peer`,
          value: result.ms,
          unit: 'ms',
          better: 'lower',
          baseline: { label: 'bare Yjs in memory', value: bare },
          target: '<= 2',
          note: `typing done at ${result.typedMs.toFixed(0)} ms; ${result.frames} frames from the writer; the 2nd peer's text equals endContent`,
        },
        {
          name: "the same, against bare Yjs doing both peers' work in this process (typed, and applied live to a 2nd document every 256 edits)",
          value: result.ms,
          unit: 'ms',
          better: 'lower',
          baseline: { label: 'bare Yjs, 2 documents in memory', value: bareLive },
          note: "both peers run in this one process, so the second peer's apply is on the same thread as the typing",
        },
      ]
    },
  },
]
