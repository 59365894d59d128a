/**
 * Discovery and redial of the libp2p transport: the peers it knows (from
 * bootstrap, mDNS, dials and inbound connections), the Concord connections
 * open or being opened to each, and the level-triggered redial loop that
 * reopens a Concord connection to a known peer with exponential backoff
 * (capped, with jitter). See the module comment of libp2p-transport.ts.
 */
import type { Libp2p, PeerId } from '@libp2p/interface'
import type { Multiaddr } from '@multiformats/multiaddr'
import type { Services } from './libp2p-node.ts'
import type { StreamConnection } from './stream-connection.ts'

/** A peer the transport knows. */
export interface KnownPeer {
  readonly id: PeerId
  /** Addresses we learned for it (bootstrap or dial); identify adds more in the peer store. */
  addrs: Multiaddr[]
  /** When the next redial may start (ms since epoch); undefined: not scheduled. */
  nextAttempt: number | undefined
  delayMs: number
  /** `forget()` was called: no automatic reconnection until it is dialled again. */
  forgotten: boolean
  /** Its libp2p connection dropped since we last had a Concord connection with it. */
  lost: boolean
}

/** Redial backoff bounds. */
export interface RedialTiming {
  readonly minDelayMs: number
  readonly maxDelayMs: number
}

/** What the peer book needs from its transport. */
export interface PeerBookContext {
  /** Redial timing; undefined: redial is off. */
  readonly redial: RedialTiming | undefined
  /** The transport's counters this module updates. */
  readonly stats: { redialed: number; discoveryDials: number; redialFailures: number }
  isStopped(): boolean
  /** This node's PeerId (after start). */
  localPeer(): string | undefined
  /** Whether `peer` may connect (allowlist, blocked). */
  admits(peer: string): boolean
  /** The started node, if any. */
  node(): Libp2p<Services> | undefined
  /** Dials `target` and opens a Concord stream to it (registered with {@link PeerBook.add}). */
  openConcord(node: Libp2p<Services>, target: PeerId): Promise<StreamConnection>
  /** Announces a Concord connection opened here on our own. */
  announce(connection: StreamConnection): void
}

/** Known peers, their Concord connections, and the redial loop. */
export class PeerBook {
  private readonly known = new Map<string, KnownPeer>()
  private readonly concord = new Map<string, Set<StreamConnection>>()
  private readonly pending = new Map<string, number>()

  constructor(private readonly context: PeerBookContext) {}

  /** The known peer `peerId`, if any. */
  get(peerId: string): KnownPeer | undefined {
    return this.known.get(peerId)
  }

  /** Records `id` (and new addresses for it); returns its entry. */
  remember(id: PeerId, addrs: readonly Multiaddr[]): KnownPeer {
    const key = id.toString()
    let peer = this.known.get(key)
    if (!peer) {
      peer = { id, addrs: [], nextAttempt: undefined, delayMs: this.context.redial?.minDelayMs ?? 0, forgotten: false, lost: false }
      this.known.set(key, peer)
    }
    for (const ma of addrs) {
      if (!peer.addrs.some((known) => known.equals(ma))) peer.addrs.push(ma)
    }
    return peer
  }

  /** PeerIds with at least one open Concord connection. */
  connectedPeers(): string[] {
    return [...this.concord.entries()].filter(([, set]) => set.size > 0).map(([id]) => id)
  }

  /** The open Concord connections to `peer`. */
  connectionsOf(peer: string): readonly StreamConnection[] {
    return [...(this.concord.get(peer) ?? [])]
  }

  /** Every open Concord connection. */
  allConnections(): StreamConnection[] {
    const all: StreamConnection[] = []
    for (const set of this.concord.values()) all.push(...set)
    return all
  }

  /** Registers a new Concord connection (if still open) and clears its peer's redial state. */
  add(connection: StreamConnection): void {
    const peer = connection.remoteIdentity
    let set = this.concord.get(peer)
    if (!set) this.concord.set(peer, (set = new Set()))
    if (connection.open) set.add(connection)
    const known = this.known.get(peer)
    if (known) {
      known.nextAttempt = undefined
      known.lost = false
    }
  }

  /** A Concord connection ended: unregisters it and schedules a redial of its peer. */
  closed(connection: StreamConnection): void {
    const peer = connection.remoteIdentity
    const set = this.concord.get(peer)
    set?.delete(connection)
    if (set && set.size === 0) this.concord.delete(peer)
    const known = this.known.get(peer)
    const redial = this.context.redial
    if (!known || !redial || this.context.isStopped() || known.forgotten || this.hasConcord(peer)) return
    // Reconnect, whoever closed and why (a refusal, a handshake timeout, the
    // link going away). The delay doubles while connections keep ending
    // quickly (a peer that refuses us costs one handshake per maxDelayMs at
    // most) and starts again from minDelayMs after one that lasted.
    const { minDelayMs, maxDelayMs } = redial
    if (Date.now() - connection.openedAt >= maxDelayMs) known.delayMs = minDelayMs
    known.lost = true
    this.scheduleRedial(known, known.delayMs)
    known.delayMs = Math.min(maxDelayMs, Math.max(minDelayMs, known.delayMs * 2))
  }

  /** A Concord connection to `peer` is open or being opened. */
  hasConcord(peer: string): boolean {
    return (this.concord.get(peer)?.size ?? 0) > 0 || (this.pending.get(peer) ?? 0) > 0
  }

  /** A Concord connection to `peer` is open. */
  hasOpenConcord(peer: string): boolean {
    return (this.concord.get(peer)?.size ?? 0) > 0
  }

  /** Another Concord connection than `connection` to `peer` is open. */
  hasConcordOtherThan(peer: string, connection: StreamConnection): boolean {
    for (const other of this.concord.get(peer) ?? []) if (other !== connection && other.open) return true
    return false
  }

  /** A Concord connection to `peer` is being opened. */
  beginPending(peer: string): void {
    this.pending.set(peer, (this.pending.get(peer) ?? 0) + 1)
  }

  /** Ends a {@link beginPending}. */
  endPending(peer: string): void {
    const count = (this.pending.get(peer) ?? 1) - 1
    if (count <= 0) this.pending.delete(peer)
    else this.pending.set(peer, count)
  }

  /** How long the larger PeerId of a pair waits before opening (so both rarely do at once). */
  graceMs(): number {
    return Math.max(250, 2 * (this.context.redial?.minDelayMs ?? 250))
  }

  /** Schedules a redial of `peer` after `delayMs` (plus the grace delay for the larger PeerId). */
  scheduleRedial(peer: KnownPeer, delayMs: number): void {
    const localPeer = this.context.localPeer()
    if (!this.context.redial || this.context.isStopped() || peer.id.toString() === localPeer) return
    if (!this.context.admits(peer.id.toString())) return
    // The larger PeerId waits longer, so the two sides rarely dial at once.
    const extra = localPeer! < peer.id.toString() ? 0 : this.graceMs()
    const at = Date.now() + delayMs + extra
    if (peer.nextAttempt === undefined || peer.nextAttempt > at) peer.nextAttempt = at
  }

  /** One turn of the redial loop: starts every redial that is due. */
  tick(): void {
    if (this.context.isStopped() || !this.context.node()) return
    const now = Date.now()
    for (const peer of this.known.values()) {
      const id = peer.id.toString()
      if (peer.forgotten) continue
      // Level-triggered: a known peer without a Concord connection and with
      // nothing scheduled (a failed auto-open, a lost event) gets an attempt.
      if (peer.nextAttempt === undefined && !this.hasConcord(id)) this.scheduleRedial(peer, peer.delayMs)
      if (peer.nextAttempt === undefined || peer.nextAttempt > now) continue
      // A Concord connection may still be closing after its libp2p connection
      // dropped: keep the schedule, the next tick looks again.
      if (this.hasConcord(id)) continue
      peer.nextAttempt = undefined
      void this.attemptRedial(peer)
    }
  }

  private async attemptRedial(peer: KnownPeer): Promise<void> {
    const id = peer.id.toString()
    const node = this.context.node()!
    const wasLost = peer.lost
    this.beginPending(id)
    try {
      // Tell libp2p every address we know; it also has identify's.
      if (peer.addrs.length > 0) await node.peerStore.merge(peer.id, { multiaddrs: peer.addrs })
      if (this.hasOpenConcord(id) || this.context.isStopped()) return
      const connection = await this.context.openConcord(node, peer.id)
      if (this.hasConcordOtherThan(id, connection)) {
        connection.abort('duplicate Concord stream')
        return
      }
      if (wasLost) this.context.stats.redialed++
      else this.context.stats.discoveryDials++
      this.context.announce(connection)
    } catch (error) {
      if (this.context.isStopped()) return
      this.context.stats.redialFailures++
      if (((error as Error).cause as Error | undefined)?.name === 'UnsupportedProtocolError') {
        // A libp2p node that does not speak Concord (found by mDNS, say): leave it alone.
        peer.forgotten = true
        return
      }
      const redial = this.context.redial!
      peer.delayMs = Math.min(redial.maxDelayMs, Math.max(redial.minDelayMs, peer.delayMs * 2))
      const jitter = 0.75 + Math.random() * 0.5
      if (!this.hasConcord(id) && !peer.forgotten) peer.nextAttempt = Date.now() + peer.delayMs * jitter
    } finally {
      this.endPending(id)
    }
  }
}
