/**
 * `peer/heavy-apply-interleave`: how long a small write waits while another
 * session floods a peer with heavy commits. A server peer (in-memory store)
 * receives, over WebSocket on 127.0.0.1, a burst of 20 heavy Yjs commits
 * (each a new client's 20,000 separate array inserts, ~0.2 MB, ~20 ms to
 * apply) from one raw session, while a second peer writes a counter
 * increment and waits for the server's acknowledgement (`flush({ acks: 1 })`),
 * 30 times in a row. Figures: the small writer's worst and median wait with
 * the heavy-apply gate (peer/apply-gate.ts: heavy commits one at a time,
 * each after a macrotask turn) beside the same run with it off
 * (`heavyApplyBytes: 0`).
 */
import * as Y from 'yjs'
import { Emitter } from '../crdt/emitter.ts'
import { createPeer } from '../peer/index.ts'
import { attachSession, agentId, type LocalCommit, type SyncHost } from '../sync/index.ts'
import { WebSocketTransport } from '../transports/websocket/index.ts'
import type { Benchmark, Measurement } from './harness.ts'

const HEAVY = 20
const SMALL = 30

/** A sync host that holds nothing and sends what it is given as live commits. */
class PushHost implements SyncHost {
  private readonly commits = new Emitter<{ commit: LocalCommit }>()
  list() {
    return []
  }
  typeOf() {
    return undefined
  }
  version(): Uint8Array {
    throw new Error('holds nothing')
  }
  deltaSince() {
    return null
  }
  async applyRemote() {
    return { changed: [] }
  }
  subscribe(listener: (commit: LocalCommit) => void) {
    return this.commits.on('commit', listener)
  }
  authenticate() {
    return true
  }
  access() {
    return 'write' as const
  }
  push(name: string, delta: Uint8Array): void {
    this.commits.emit('commit', { entries: [{ name, replicaType: 'yjs', delta }] })
  }
}

function heavyUpdate(seed: number): Uint8Array {
  const doc = new Y.Doc()
  doc.clientID = 1_000 + seed
  const array = doc.getArray<number>('a')
  doc.transact(() => {
    for (let i = 0; i < 20_000; i++) array.insert(i % 2 === 0 ? 0 : array.length >> 1, [i])
  })
  return Y.encodeStateAsUpdate(doc)
}

async function run(heavyApplyBytes: number, updates: readonly Uint8Array[]): Promise<{ worst: number; median: number }> {
  const server = await createPeer({ agentId: 'server', heavyApplyBytes })
  const { url } = await server.listen({ port: 0, host: '127.0.0.1' })
  const writer = await createPeer({ agentId: 'writer' })
  const transport = new WebSocketTransport()
  try {
    const counter = await writer.counter('small')
    await writer.connect(url)
    const host = new PushHost()
    const session = attachSession(await transport.dial(url), host, { agentId: agentId('heavy'), window: 1000, maxQueuedCommits: 1000 })
    await new Promise((resolve) => session.events.once('synced', resolve))
    for (const [i, update] of updates.entries()) host.push(`heavy-${i}`, update)
    const waits: number[] = []
    for (let i = 0; i < SMALL; i++) {
      const start = performance.now()
      counter.increment()
      await writer.flush({ acks: 1 })
      waits.push(performance.now() - start)
    }
    session.close('done')
    waits.sort((a, b) => a - b)
    return { worst: waits.at(-1)!, median: waits[waits.length >> 1] }
  } finally {
    await transport.stop()
    await writer.close()
    await server.close()
  }
}

const interleave: Benchmark = {
  name: 'peer/heavy-apply-interleave',
  async run(): Promise<Measurement[]> {
    const updates = Array.from({ length: HEAVY }, (_, i) => heavyUpdate(i))
    const gated = [await run(64 * 1024, updates), await run(64 * 1024, updates)]
    const open = [await run(0, updates), await run(0, updates)]
    const best = (runs: Array<{ worst: number; median: number }>, key: 'worst' | 'median') => Math.min(...runs.map((r) => r[key]))
    return [
      {
        name: `small write's worst wait during ${HEAVY} heavy commits, gate on`,
        value: best(gated, 'worst'),
        unit: 'ms',
        better: 'lower',
        baseline: { label: 'gate off', value: best(open, 'worst') },
      },
      {
        name: 'its median wait, gate on',
        value: best(gated, 'median'),
        unit: 'ms',
        better: 'lower',
        baseline: { label: 'gate off', value: best(open, 'median') },
      },
    ]
  },
}

/** The heavy-apply benchmarks. */
export const benchmarks: Benchmark[] = [interleave]
