/**
 * Sync benchmarks: bytes to resync an offline Yjs document that misses 1% and
 * 50% of the automerge-paper trace, over the Concord protocol (handshake,
 * VERSIONS both ways, the missing delta, DONE and ACK frames included),
 * against what Yjs's own sync exchange would send for the same two states
 * (y-protocols step 1 and step 2 both ways: the state vectors plus
 * `Y.diffUpdate` of each side against the other's state vector).
 *
 * And the cost of the protocol-2 handshake (HELLO with a nonce, AUTH proofs
 * both ways, the dialer first: one more round trip and two HMACs) against
 * protocol 1's bearer token, over real WebSocket connections on 127.0.0.1.
 */
import * as Y from 'yjs'
import type { Benchmark, Measurement } from './harness.ts'
import { Network } from '../transports/memory/index.ts'
import { SimPeer, connectPair } from '../test/sync/helpers/sim.ts'
import { MemoryHost } from '../test/sync/helpers/memory-host.ts'
import { attachSession } from '../sync/attach.ts'
import { agentId } from '../crdt/agent-id.ts'
import { WebSocketTransport } from '../transports/websocket/index.ts'
import { timeMs } from './harness.ts'
import { loadTrace, type SequentialTrace as Trace } from '../test/crdt/documents/traces.ts'

/** Replays the trace; returns the update of the whole document and of the first `fraction` of it. */
function states(trace: Trace, missing: number): { full: Uint8Array; partial: Uint8Array } {
  const doc = new Y.Doc()
  doc.clientID = 1
  const text = doc.getText('t')
  const cut = Math.floor(trace.txns.length * (1 - missing))
  let partial: Uint8Array | undefined
  trace.txns.forEach((txn, i) => {
    if (i === cut) partial = Y.encodeStateAsUpdate(doc)
    doc.transact(() => {
      for (const [position, deleteCount, insert] of txn.patches) {
        if (deleteCount > 0) text.delete(position, deleteCount)
        if (insert.length > 0) text.insert(position, insert)
      }
    })
  })
  if (text.toString() !== trace.endContent) throw new Error('trace replay does not match endContent')
  return { full: Y.encodeStateAsUpdate(doc), partial: partial ?? Y.encodeStateAsUpdate(doc) }
}

async function resync(full: Uint8Array, partial: Uint8Array): Promise<{ concord: number; concordPayload: number }> {
  const network = new Network({ seed: 1 })
  const online = new SimPeer(network, 'online')
  const offline = new SimPeer(network, 'offline')
  await online.listen()
  online.host.open('paper', 'yjs').applyDelta(full)
  offline.host.open('paper', 'yjs').applyDelta(partial)
  const { ab, ba } = await connectPair(network, offline, online)
  const a = JSON.stringify(online.host.values())
  if (a !== JSON.stringify(offline.host.values())) throw new Error('resync did not converge')
  return { concord: ab.stats.bytesOut + ba.stats.bytesOut, concordPayload: ba.stats.bytesOut }
}

function yjsBaseline(full: Uint8Array, partial: Uint8Array): { total: number; payload: number } {
  const svOffline = Y.encodeStateVectorFromUpdate(partial)
  const svOnline = Y.encodeStateVectorFromUpdate(full)
  const toOffline = Y.diffUpdate(full, svOffline)
  const toOnline = Y.diffUpdate(partial, svOnline)
  return { total: svOffline.length + toOffline.length + svOnline.length + toOnline.length, payload: svOnline.length + toOffline.length }
}

/** Milliseconds for `count` handshakes, one after the other, each on a new WebSocket connection (dial until both sides are open). */
async function handshakes(count: number, versions: { min: number; max: number }): Promise<number> {
  const secret = 'bench-secret-0123456789abcdef'
  const server = new MemoryHost('server', { token: secret })
  const listener = new WebSocketTransport()
  let opened = 0
  listener.events.on('connection', (connection) => {
    const session = attachSession(connection, server, { agentId: agentId('server'), versions, legacyBearer: versions.max < 2 })
    session.events.once('open', () => {
      opened++
    })
  })
  const url = await listener.listen({ port: 0 })
  const dialer = new WebSocketTransport()
  const client = new MemoryHost('client')
  try {
    return await timeMs(async () => {
      for (let i = 0; i < count; i++) {
        const session = attachSession(await dialer.dial(url), client, { agentId: agentId('client'), token: secret, versions })
        const before = opened
        await new Promise<void>((resolve, reject) => {
          session.events.once('open', () => resolve())
          session.events.once('close', ({ reason }) => reject(new Error(`handshake failed: ${reason}`)))
        })
        while (opened === before) await new Promise((resolve) => setImmediate(resolve))
        session.close('next')
      }
    })
  } finally {
    await dialer.stop()
    await listener.stop()
  }
}

export const benchmarks: Benchmark[] = [
  {
    name: 'sync/handshake-websocket',
    async run(): Promise<Measurement[]> {
      const count = 150
      await handshakes(20, { min: 1, max: 1 }) // warm-up, both kinds
      await handshakes(20, { min: 1, max: 2 })
      let bearer = 0
      let proof = 0
      for (let round = 0; round < 2; round++) {
        // interleaved, so drift of the machine hits both alike
        bearer += await handshakes(count, { min: 1, max: 1 })
        proof += await handshakes(count, { min: 1, max: 2 })
      }
      return [
        {
          name: `${2 * count} handshakes with a shared secret, dial to both sides open`,
          value: proof / (2 * count),
          unit: 'ms',
          better: 'lower',
          baseline: { label: 'protocol 1 bearer token', value: bearer / (2 * count) },
          note: 'protocol 2 adds a round trip (the listener proves after the dialer) and 2 HMAC-SHA-256 per side',
        },
      ]
    },
  },
  {
    name: 'sync/yjs-resync-bytes',
    async run(): Promise<Measurement[]> {
      const trace = loadTrace('automerge-paper')
      const out: Measurement[] = []
      for (const missing of [0.01, 0.5]) {
        const { full, partial } = states(trace, missing)
        const ours = await resync(full, partial)
        const yjs = yjsBaseline(full, partial)
        const label = `${missing * 100}% missing`
        out.push({
          name: `resync bytes, ${label} (both directions)`,
          value: ours.concord,
          unit: 'bytes',
          better: 'lower',
          baseline: { label: 'Yjs sync step 1+2 both ways', value: yjs.total },
          target: '<= 1.1',
        })
        out.push({
          name: `resync bytes, ${label} (online peer to offline)`,
          value: ours.concordPayload,
          unit: 'bytes',
          better: 'lower',
          baseline: { label: 'state vector + Y.diffUpdate', value: yjs.payload },
          target: '<= 1.1',
        })
      }
      return out
    },
  },
]
