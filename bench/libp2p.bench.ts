/**
 * libp2p transport benchmarks: 16 real libp2p nodes on 127.0.0.1 in one
 * process (full mesh via bootstrap), a burst of frames delivered to all,
 * gossipsub (one publish per frame) against direct Concord streams (one send
 * per frame and peer). This measures the transport alone; the convergence
 * benchmark of issue 6 (a burst of CRDT writes until every replica agrees)
 * needs createPeer() and builds on these helpers.
 *
 * Figures:
 * - time: from the first send until every node received every frame (ms);
 * - wire bytes: TCP payload bytes written by all sockets during the burst
 *   (Noise + Yamux + gossipsub/Concord framing + background pings/heartbeats),
 *   counted through node:diagnostics_channel, against the payload delivered.
 */
import diagnostics from 'node:diagnostics_channel'
import type { Socket } from 'node:net'
import type { Benchmark, Measurement } from './harness.ts'
import { timeMs } from './harness.ts'
import { createLibp2pTransport, type Libp2pTransport } from '../transports/libp2p/index.ts'
import type { Connection } from '../transports/transport.ts'

const NODES = 16
const TOPIC = 'concord/bench'
const FRAME_BYTES = 256
/** Quiet time before and after a burst: three gossipsub heartbeats (mcache gossip window). */
const QUIET_MS = 1_500

// ---- wire byte counter -------------------------------------------------------

const sockets = new Set<Socket>()
const onSocket = (message: unknown): void => { sockets.add((message as { socket: Socket }).socket) }
function wireBytes(): number {
  let total = 0
  for (const socket of sockets) total += socket.bytesWritten
  return total
}

// ---- the mesh ----------------------------------------------------------------

interface MeshNode {
  readonly transport: Libp2pTransport
  /** Open Concord connections by remote PeerId (two when both sides opened one at once). */
  readonly links: Map<string, Set<Connection>>
  /** Called with (origin PeerId, frame) for direct frames and pub/sub messages. */
  onFrame: (from: string, frame: Uint8Array) => void
}

/** Starts the mesh into `nodes` (filled as nodes start, so the caller can stop them on failure). */
async function startMesh(nodes: MeshNode[], options: { floodPublish: boolean }): Promise<void> {
  const addresses: string[] = []
  for (let i = 0; i < NODES; i++) {
    const transport = createLibp2pTransport({ bootstrap: [...addresses], gossipsub: { heartbeatIntervalMs: 500, floodPublish: options.floodPublish } })
    const node: MeshNode = { transport, links: new Map(), onFrame: () => undefined }
    transport.events.on('connection', (connection) => {
      const peer = connection.remoteIdentity!
      let set = node.links.get(peer)
      if (!set) node.links.set(peer, (set = new Set()))
      set.add(connection)
      connection.events.on('message', (frame) => node.onFrame(peer, frame))
      connection.events.on('close', () => {
        set.delete(connection)
        if (set.size === 0 && node.links.get(peer) === set) node.links.delete(peer)
      })
    })
    addresses.push(await transport.listen())
    nodes.push(node)
  }
  for (const node of nodes) node.transport.pubsub.subscribe(TOPIC, (data, from) => node.onFrame(from, data))
  await waitFor('full mesh and subscriptions', () => nodes.every((n) =>
    n.links.size === NODES - 1 && n.transport.pubsub.subscribers(TOPIC).length === NODES - 1), 60_000)
  // let gossipsub build its mesh (a few heartbeats) before measuring
  await new Promise((resolve) => setTimeout(resolve, 2_000))
}

async function waitFor(what: string, predicate: () => boolean, deadlineMs: number): Promise<void> {
  const end = Date.now() + deadlineMs
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`libp2p bench: timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
}

/** A frame: 2 bytes writer index, 4 bytes sequence, then filler. */
function makeFrame(writer: number, seq: number): Uint8Array {
  const frame = new Uint8Array(FRAME_BYTES)
  const view = new DataView(frame.buffer)
  view.setUint16(0, writer)
  view.setUint32(2, seq)
  for (let i = 6; i < FRAME_BYTES; i++) frame[i] = (seq + i) & 0xff
  return frame
}

type Mode = 'direct' | 'gossipsub'

/**
 * Each of `writers` nodes sends `perWriter` frames to everyone; resolves
 * with the time until every node got every frame from every other writer.
 */
async function burst(nodes: MeshNode[], mode: Mode, writers: number, perWriter: number): Promise<{ ms: number; bytes: number; payload: number }> {
  const expected = nodes.map((_, i) => (i < writers ? writers - 1 : writers) * perWriter)
  const seen = nodes.map(() => new Set<number>())
  let complete = expected.filter((count) => count === 0).length
  let done!: () => void
  const allDone = new Promise<void>((resolve) => { done = resolve })
  nodes.forEach((node, i) => {
    node.onFrame = (_from, frame) => {
      if (frame.byteLength !== FRAME_BYTES) return
      const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength)
      const key = view.getUint16(0) * 1_000_000 + view.getUint32(2)
      const set = seen[i]
      if (set.has(key)) return
      set.add(key)
      if (set.size === expected[i] && ++complete === nodes.length) done()
    }
  })
  // let the previous burst's traffic (gossip IHAVE rounds, window updates) die down
  await sleep(QUIET_MS)
  const before = wireBytes()
  const ms = await timeMs(async () => {
    await Promise.all(nodes.slice(0, writers).map(async (node, writer) => {
      for (let seq = 0; seq < perWriter; seq++) {
        const frame = makeFrame(writer, seq)
        if (mode === 'gossipsub') await node.transport.pubsub.publish(TOPIC, frame)
        else await Promise.all([...node.links.values()].map((set) => [...set][0].send(frame)))
      }
    }))
    let timer: ReturnType<typeof setTimeout> | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`libp2p bench: ${mode} burst incomplete after 60 s: received ${seen.map((set) => set.size)} of ${expected}`)), 60_000)
    })
    try {
      await Promise.race([allDone, deadline])
    } finally {
      clearTimeout(timer)
    }
  })
  // let in-flight gossip (forwards, IHAVE of the last frames) land before reading the counter
  await sleep(QUIET_MS)
  const bytes = wireBytes() - before
  for (const node of nodes) node.onFrame = () => undefined
  return { ms, bytes, payload: writers * perWriter * (NODES - 1) * FRAME_BYTES }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Bytes written by all sockets in `ms` of no application traffic (pings, gossipsub heartbeats). */
async function idleBytes(ms: number): Promise<number> {
  await sleep(QUIET_MS)
  const before = wireBytes()
  await sleep(ms)
  return wireBytes() - before
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)]
}

async function compare(nodes: MeshNode[], label: string, writers: number, perWriter: number, rounds: number): Promise<Measurement[]> {
  const results: Record<Mode, Array<{ ms: number; bytes: number; payload: number }>> = { direct: [], gossipsub: [] }
  for (let round = 0; round < rounds + 1; round++) {
    for (const mode of ['direct', 'gossipsub'] as const) {
      const result = await burst(nodes, mode, writers, perWriter)
      if (round > 0) results[mode].push(result) // round 0 warms up
    }
  }
  const payload = results.direct[0].payload
  const note = `${writers} writer(s) x ${perWriter} frames of ${FRAME_BYTES} B to ${NODES - 1} peers each (${(payload / 1024).toFixed(0)} KiB delivered), median of ${rounds}; bytes include ${(2 * QUIET_MS / 1000).toFixed(0)} s of idle background`
  const ms = (mode: Mode) => median(results[mode].map((r) => r.ms))
  const bytes = (mode: Mode) => median(results[mode].map((r) => r.bytes))
  return [
    { name: `${label}: time to deliver to all`, value: ms('gossipsub'), unit: 'ms', better: 'lower', baseline: { label: 'direct streams', value: ms('direct') }, note },
    { name: `${label}: wire bytes`, value: bytes('gossipsub') / 1024, unit: 'KiB', better: 'lower', baseline: { label: 'direct streams', value: bytes('direct') / 1024 } },
    { name: `${label}: wire bytes / payload (direct)`, value: bytes('direct') / payload, unit: 'x', better: 'lower' },
  ]
}

async function run(floodPublish: boolean): Promise<Measurement[]> {
  diagnostics.subscribe('net.client.socket', onSocket)
  diagnostics.subscribe('net.server.socket', onSocket)
  const nodes: MeshNode[] = []
  try {
    const setupMs = await timeMs(() => startMesh(nodes, { floodPublish }))
    const measurements: Measurement[] = [
      { name: `${NODES} nodes: full mesh via bootstrap + subscriptions`, value: setupMs - 2_000, unit: 'ms', better: 'lower', note: 'start, bootstrap dials, identify, auto-opened Concord streams, gossipsub subscriptions' },
    ]
    const idle = await idleBytes(5_000)
    measurements.push({ name: 'idle background traffic (whole mesh)', value: idle / 1024 / 5, unit: 'KiB/s', better: 'lower', note: 'pings every 10 s per connection, gossipsub heartbeats every 500 ms' })
    measurements.push(...await compare(nodes, 'one writer', 1, 200, 2))
    measurements.push(...await compare(nodes, 'all 16 write', NODES, 25, 2))
    return measurements
  } finally {
    await Promise.all(nodes.map((node) => node.transport.stop()))
    diagnostics.unsubscribe('net.client.socket', onSocket)
    diagnostics.unsubscribe('net.server.socket', onSocket)
    sockets.clear()
  }
}

/**
 * The libp2p benchmarks. Gossipsub runs with its default floodPublish (the
 * publisher sends to every subscriber); `LIBP2P_BENCH_MESH_ONLY=1` adds the
 * mesh-only variant (publisher sends to its D mesh peers, who relay).
 */
export const benchmarks: Benchmark[] = [
  { name: 'libp2p/fanout-16', run: () => run(true) },
  ...(process.env.LIBP2P_BENCH_MESH_ONLY ? [{ name: 'libp2p/fanout-16 (gossipsub mesh only)', run: () => run(false) }] : []),
]
