/**
 * libp2p benchmarks, 16 real libp2p nodes on 127.0.0.1 in one process
 * (full mesh via bootstrap).
 *
 * `libp2p/fanout-16` measures the transport alone: a burst of frames
 * delivered to all, gossipsub (one publish per frame) against direct Concord
 * streams (one send per frame and peer).
 *
 * `libp2p/peers-16` measures createPeer() peers: a burst of CRDT writes on
 * every peer (counter, OR-set, Yjs text) until every replica agrees, with
 * the gossipsub fan-out (`gossipsub: true`: live deltas by gossip, sessions
 * for anti-entropy and acks) against live deltas over the direct sync
 * sessions. The two meshes run side by side, rounds interleaved; each
 * socket's bytes are attributed to its mesh by port.
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
import { createPeer, gossipTopic, type GossipStats, type Peer } from '../peer/index.ts'

const NODES = 16
const TOPIC = 'concord/bench'
const FRAME_BYTES = 256
/** Quiet time before and after a burst: three gossipsub heartbeats (mcache gossip window). */
const QUIET_MS = 1_500

// ---- wire byte counter -------------------------------------------------------

const sockets = new Set<Socket>()
const onSocket = (message: unknown): void => {
  sockets.add((message as { socket: Socket }).socket)
}
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
  await waitFor(
    'full mesh and subscriptions',
    () => nodes.every((n) => n.links.size === NODES - 1 && n.transport.pubsub.subscribers(TOPIC).length === NODES - 1),
    60_000,
  )
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
  const allDone = new Promise<void>((resolve) => {
    done = resolve
  })
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
    await Promise.all(
      nodes.slice(0, writers).map(async (node, writer) => {
        for (let seq = 0; seq < perWriter; seq++) {
          const frame = makeFrame(writer, seq)
          if (mode === 'gossipsub') await node.transport.pubsub.publish(TOPIC, frame)
          else await Promise.all([...node.links.values()].map((set) => [...set][0].send(frame)))
        }
      }),
    )
    let timer: ReturnType<typeof setTimeout> | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`libp2p bench: ${mode} burst incomplete after 60 s: received ${seen.map((set) => set.size)} of ${expected}`)),
        60_000,
      )
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
  const note = `${writers} writer(s) x ${perWriter} frames of ${FRAME_BYTES} B to ${NODES - 1} peers each (${(payload / 1024).toFixed(0)} KiB delivered), median of ${rounds}; bytes include ${((2 * QUIET_MS) / 1000).toFixed(0)} s of idle background`
  const ms = (mode: Mode) => median(results[mode].map((r) => r.ms))
  const bytes = (mode: Mode) => median(results[mode].map((r) => r.bytes))
  return [
    {
      name: `${label}: time to deliver to all`,
      value: ms('gossipsub'),
      unit: 'ms',
      better: 'lower',
      baseline: { label: 'direct streams', value: ms('direct') },
      note,
    },
    {
      name: `${label}: wire bytes`,
      value: bytes('gossipsub') / 1024,
      unit: 'KiB',
      better: 'lower',
      baseline: { label: 'direct streams', value: bytes('direct') / 1024 },
    },
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
      {
        name: `${NODES} nodes: full mesh via bootstrap + subscriptions`,
        value: setupMs - 2_000,
        unit: 'ms',
        better: 'lower',
        note: 'start, bootstrap dials, identify, auto-opened Concord streams, gossipsub subscriptions',
      },
    ]
    const idle = await idleBytes(5_000)
    measurements.push({
      name: 'idle background traffic (whole mesh)',
      value: idle / 1024 / 5,
      unit: 'KiB/s',
      better: 'lower',
      note: 'pings every 10 s per connection, gossipsub heartbeats every 500 ms',
    })
    measurements.push(...(await compare(nodes, 'one writer', 1, 200, 2)))
    measurements.push(...(await compare(nodes, 'all 16 write', NODES, 25, 2)))
    return measurements
  } finally {
    await Promise.all(nodes.map((node) => node.transport.stop()))
    diagnostics.unsubscribe('net.client.socket', onSocket)
    diagnostics.unsubscribe('net.server.socket', onSocket)
    sockets.clear()
  }
}

// ---- createPeer() peers: gossipsub fan-out vs direct sessions ------------------

/** Writes per peer and round: this many of each of counter, OR-set and Yjs text. */
const PEER_WRITES = 5

interface PeerMesh {
  readonly label: 'direct' | 'gossipsub'
  readonly peers: Peer[]
  /** TCP listen ports of its nodes: a socket belongs to the mesh if either end is one. */
  readonly ports: Set<number>
}

function meshBytes(mesh: PeerMesh): number {
  let total = 0
  for (const socket of sockets) {
    if (mesh.ports.has(socket.localPort ?? -1) || mesh.ports.has(socket.remotePort ?? -1)) total += socket.bytesWritten
  }
  return total
}

async function startPeerMesh(mesh: PeerMesh): Promise<void> {
  const addresses: string[] = []
  const gossip = mesh.label === 'gossipsub'
  for (let i = 0; i < NODES; i++) {
    const peer = await createPeer({ agentId: `${mesh.label}-${i}` })
    mesh.peers.push(peer)
    const { multiaddrs } = await peer.listen({
      libp2p: { bootstrap: [...addresses], gossipsub: gossip ? { heartbeatIntervalMs: 500 } : false },
    })
    addresses.push(multiaddrs[0])
    mesh.ports.add(Number(multiaddrs[0].split('/')[4]))
    await Promise.all([peer.counter('tasks'), peer.set<string>('seen'), peer.yjs('notes')])
  }
  const topic = gossipTopic()
  await waitFor(
    `${mesh.label} mesh: sessions${gossip ? ' and subscriptions' : ''}`,
    () =>
      mesh.peers.every((peer) => new Set(peer.connectedPeers).size === NODES - 1 && (!gossip || peer.libp2p!.pubsub.subscribers(topic).length === NODES - 1)),
    60_000,
  )
  await sleep(2_000) // gossipsub mesh upkeep (a few heartbeats)
}

/** A burst of writes on every peer; resolves with the time until every replica agrees and the mesh's wire bytes. */
async function peerBurst(mesh: PeerMesh, round: number): Promise<{ ms: number; bytes: number }> {
  const replicas = await Promise.all(
    mesh.peers.map(async (peer) => ({
      counter: await peer.counter('tasks'),
      set: await peer.set<string>('seen'),
      notes: await peer.yjs('notes'),
    })),
  )
  const target = {
    counter: replicas[0].counter.value() + NODES * PEER_WRITES,
    set: replicas[0].set.size + NODES * PEER_WRITES,
    text: replicas[0].notes.doc.getText('t').length + NODES * PEER_WRITES,
  }
  await sleep(QUIET_MS)
  const before = meshBytes(mesh)
  const ms = await timeMs(async () => {
    for (const [i, r] of replicas.entries()) {
      for (let k = 0; k < PEER_WRITES; k++) {
        r.counter.increment()
        r.set.add(`r${round}-p${i}-${k}`)
        r.notes.doc.getText('t').insert(0, 'x')
      }
    }
    await waitFor(
      `${mesh.label} peers converge`,
      () => replicas.every((r) => r.counter.value() === target.counter && r.set.size === target.set && r.notes.doc.getText('t').length === target.text),
      60_000,
    )
  })
  await sleep(QUIET_MS) // acks, gossip IHAVE of the last messages
  return { ms, bytes: meshBytes(mesh) - before }
}

async function runPeers(): Promise<Measurement[]> {
  diagnostics.subscribe('net.client.socket', onSocket)
  diagnostics.subscribe('net.server.socket', onSocket)
  const meshes: PeerMesh[] = [
    { label: 'direct', peers: [], ports: new Set() },
    { label: 'gossipsub', peers: [], ports: new Set() },
  ]
  try {
    for (const mesh of meshes) await startPeerMesh(mesh)
    const rounds = 3
    const results = new Map<string, Array<{ ms: number; bytes: number }>>(meshes.map((m) => [m.label, []]))
    for (let round = 0; round <= rounds; round++) {
      for (const mesh of round % 2 === 0 ? meshes : [...meshes].reverse()) {
        const result = await peerBurst(mesh, round)
        if (round > 0) results.get(mesh.label)!.push(result) // round 0 warms up
      }
    }
    const ms = (label: string) => median(results.get(label)!.map((r) => r.ms))
    const bytes = (label: string) => median(results.get(label)!.map((r) => r.bytes))
    const gossipStats = meshes[1].peers.map((peer) => peer.stats().gossip!)
    const sum = (key: keyof GossipStats) => gossipStats.reduce((total, stats) => total + stats[key], 0)
    const writes = NODES * PEER_WRITES * 3
    const note = `${NODES} createPeer peers (memory stores), each writes ${PEER_WRITES} x (counter, OR-set, Yjs) = ${writes} writes per burst, median of ${rounds}`
    return [
      {
        name: `${NODES} peers: burst of ${writes} CRDT writes, time to converge`,
        value: ms('gossipsub'),
        unit: 'ms',
        better: 'lower',
        baseline: { label: 'direct sessions', value: ms('direct') },
        note,
      },
      {
        name: `${NODES} peers: burst of ${writes} CRDT writes, wire bytes`,
        value: bytes('gossipsub') / 1024,
        unit: 'KiB',
        better: 'lower',
        baseline: { label: 'direct sessions', value: bytes('direct') / 1024 },
        note: `gossip over all runs: ${sum('published')} published, ${sum('applied')} applied, ${sum('skipped')} session sends skipped, ${sum('pulls')} pulls`,
      },
    ]
  } finally {
    await Promise.all(meshes.flatMap((mesh) => mesh.peers.map((peer) => peer.close())))
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
  { name: 'libp2p/peers-16', run: runPeers },
  ...(process.env.LIBP2P_BENCH_MESH_ONLY ? [{ name: 'libp2p/fanout-16 (gossipsub mesh only)', run: () => run(false) }] : []),
]
