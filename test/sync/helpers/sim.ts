/**
 * Sync over the simulated network: peers (a {@link MemoryHost} + a memory
 * transport + sessions), wired the way the peer will wire them.
 */
import { attachSession } from '../../../sync/attach.ts'
import { agentId } from '../../../crdt/agent-id.ts'
import type { SessionOptions, SyncSession } from '../../../sync/session.ts'
import type { Network, MemoryTransport } from '../../../transports/memory/index.ts'
import { Reconnector } from '../../../transports/reconnect.ts'
import type { Connection } from '../../../transports/transport.ts'
import { MemoryHost, type MemoryHostOptions } from './memory-host.ts'

export type PeerSessionOptions = Omit<SessionOptions, 'agentId'>

/** One simulated peer. */
export class SimPeer {
  readonly host: MemoryHost
  readonly transport: MemoryTransport
  readonly sessions = new Set<SyncSession>()
  readonly reconnectors: Reconnector[] = []
  /** Every session this peer ever had (for stats). */
  readonly history: SyncSession[] = []

  constructor(
    readonly network: Network,
    readonly name: string,
    hostOptions: MemoryHostOptions = {},
    readonly sessionOptions: PeerSessionOptions = {},
    host?: MemoryHost,
  ) {
    this.host = host ?? new MemoryHost(name, hostOptions)
    this.transport = network.transport(name)
    this.transport.events.on('connection', (connection) => this.attach(connection))
  }

  async listen(): Promise<void> {
    await this.transport.listen()
  }

  attach(connection: Connection, options: PeerSessionOptions = {}): SyncSession {
    const session = attachSession(connection, this.host, {
      agentId: agentId(this.name),
      now: () => this.network.now,
      ...this.sessionOptions,
      ...options,
    })
    this.sessions.add(session)
    this.history.push(session)
    session.events.on('close', () => this.sessions.delete(session))
    return session
  }

  /** Dials `other` once; resolves with the session (after the dial; the handshake runs as the network runs). */
  async dial(other: SimPeer | string, options: PeerSessionOptions = {}): Promise<SyncSession> {
    const connection = await this.transport.dial(`memory://${typeof other === 'string' ? other : other.name}`)
    return this.attach(connection, options)
  }

  /** Keeps a connection to `other` alive (reconnects with backoff in virtual time). */
  keepConnected(other: string): Reconnector {
    const reconnector = new Reconnector({
      transport: this.transport,
      address: `memory://${other}`,
      backoff: { initialMs: 20, maxMs: 400 },
      random: () => this.network.random.next(),
      timers: this.network.timers,
      now: () => this.network.now,
      stableMs: 200,
    })
    reconnector.events.on('connection', (connection) => this.attach(connection))
    this.reconnectors.push(reconnector)
    reconnector.start()
    return reconnector
  }

  /** Ticks every open session. */
  tick(): void {
    for (const session of this.sessions) session.tick(this.network.now)
  }
}

/** Dials a → b and runs the network until nothing moves; returns both sessions. */
export async function connectPair(network: Network, a: SimPeer, b: SimPeer, options: PeerSessionOptions = {}): Promise<{ ab: SyncSession; ba: SyncSession }> {
  const before = b.history.length
  const dialing = a.dial(b, options)
  await network.run()
  const ab = await dialing
  const ba = b.history[before]
  if (!ba) throw new Error('connectPair: no inbound session')
  return { ab, ba }
}
