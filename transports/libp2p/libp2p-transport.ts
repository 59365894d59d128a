/**
 * The libp2p transport: one libp2p node per Concord peer (TCP and WebSocket
 * transports, Noise, Yamux, Identify; optional bootstrap, mDNS, gossipsub),
 * carrying Concord frames on the `/concord/sync/1.0.0` stream protocol.
 * The node is built in libp2p-node.ts; the known peers, their Concord
 * connections and the redial loop live in peer-book.ts; multiaddr parsing and
 * dial errors in addresses.ts. This module starts the node and handles the
 * stream protocol.
 *
 * Connections. One Concord {@link Connection} is one stream; its
 * `remoteIdentity` is the remote PeerId, proved by Noise. `dial(multiaddr)`
 * opens one and returns it. Every other Concord connection (opened by a
 * remote peer, or opened here on our own after discovery or a redial) is
 * announced with the `connection` event; its `direction` says who opened the
 * stream.
 *
 * Discovery and redial. Peers become known from `bootstrap`, mDNS, dials and
 * inbound connections. When libp2p connects to a peer that speaks the
 * protocol and no Concord connection to it exists, one side opens it: the
 * peer with the smaller PeerId at once, the other after a grace delay if
 * still needed (so both rarely open one at the same time; when they do, two
 * connections exist, which the sync layer tolerates, as with WebSocket peers
 * that dial each other). When the Concord connection to a known peer ends
 * (its libp2p connection dropped, or either side closed it), it is reopened
 * with exponential backoff (capped, with jitter) until it is back or the
 * transport stops; the delay grows while connections keep ending quickly.
 * `forget(peerId)` stops this for one peer; `autoConnect: false` turns all of
 * it off (the caller then owns every connection, as in the conformance
 * suite).
 *
 * Security. With `allow`, a connection gater refuses every other PeerId right
 * after the Noise handshake (see allowlist-gater.ts); inbound streams and
 * pub/sub messages are checked again.
 */
import type { Connection as Libp2pConnection, Libp2p, PeerId, Stream } from '@libp2p/interface'
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id'
import type { Multiaddr } from '@multiformats/multiaddr'
import { Emitter } from '../../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { AbortOptions, Connection, Transport, TransportEvents } from '../transport.ts'
import { listenAddresses, parseMultiaddr, peerIdOf, raceSignal, sameAddresses, toDialError, type Libp2pListenAddress } from './addresses.ts'
import { InboundAddressLimit } from './address-limit.ts'
import { createAllowlist, type PeerAllowlist } from './allowlist-gater.ts'
import { createNode, resolvePrivateKey, type Services } from './libp2p-node.ts'
import { CONCORD_PROTOCOL, DEFAULT_LIMITS, type Libp2pLimits, type Libp2pTransportOptions } from './options.ts'
import { GossipChannel, type PubSubChannel } from './pubsub.ts'
import { PeerBook } from './peer-book.ts'
import { StreamConnection } from './stream-connection.ts'

export type { Libp2pListenAddress } from './addresses.ts'

/** Default listen address: TCP on loopback, any port. Pass addresses to listen on a network. */
export const DEFAULT_LISTEN_ADDRESSES: readonly string[] = ['/ip4/127.0.0.1/tcp/0']

/** Counters of the transport, for logs, tests and benchmarks. */
export interface Libp2pTransportStats {
  /** Peers refused by the allowlist (gater, inbound stream or dial). */
  denied: number
  /** Concord connections opened, by origin: `dial()`, inbound, on a libp2p connection made by discovery, by the dial loop for a discovered peer, by a redial of a peer that went away. */
  dialed: number
  accepted: number
  autoOpened: number
  discoveryDials: number
  redialed: number
  /** Redial attempts that failed. */
  redialFailures: number
}

/**
 * Creates a libp2p transport (not yet started: `listen()` or `start()`
 * starts it, `dial()` starts it without listening).
 */
export function createLibp2pTransport(options: Libp2pTransportOptions = {}): Libp2pTransport {
  return new Libp2pTransport(options)
}

/** The libp2p transport; see the module comment. */
export class Libp2pTransport implements Transport {
  readonly name = 'libp2p'
  readonly events = new Emitter<TransportEvents>()
  readonly stats: Libp2pTransportStats = { denied: 0, dialed: 0, accepted: 0, autoOpened: 0, discoveryDials: 0, redialed: 0, redialFailures: 0 }
  /** Effective limits (defaults merged with the options). */
  readonly limits: Libp2pLimits
  /** The per-address cap on inbound connections (`limits.maxConnectionsPerAddress`). */
  readonly addressLimit: InboundAddressLimit

  private readonly options: Libp2pTransportOptions
  private readonly allow: Set<string> | undefined
  private readonly autoConnect: boolean
  private readonly redial: { minDelayMs: number; maxDelayMs: number } | undefined
  private node: Libp2p<Services> | undefined
  private starting: Promise<Libp2p<Services>> | undefined
  private stopped = false
  private localPeer: string | undefined
  private gossip: GossipChannel | undefined
  /** Known peers, their Concord connections, and the redial loop. */
  private readonly book: PeerBook
  /** libp2p connections that carried a Concord stream: never auto-opened again (a close on them was meant). */
  private readonly carried = new WeakSet<Libp2pConnection>()
  private readonly timers = new Set<ReturnType<typeof setTimeout>>()
  /** Peers cut off at run time ({@link block}). */
  private readonly blocked = new Set<string>()
  private redialTimer: ReturnType<typeof setInterval> | undefined

  constructor(options: Libp2pTransportOptions = {}) {
    this.options = options
    this.limits = { ...DEFAULT_LIMITS, ...options.limits }
    this.addressLimit = new InboundAddressLimit(this.limits.maxConnectionsPerAddress)
    this.allow = options.allow === undefined ? undefined : createAllowlist(options.allow)
    this.autoConnect = options.autoConnect ?? true
    this.redial =
      options.redial === false || this.autoConnect === false
        ? undefined
        : {
            minDelayMs: options.redial?.minDelayMs ?? 250,
            maxDelayMs: options.redial?.maxDelayMs ?? 15_000,
          }
    this.book = new PeerBook({
      redial: this.redial,
      stats: this.stats,
      isStopped: () => this.stopped,
      localPeer: () => this.localPeer,
      admits: (peer) => this.admits(peer),
      node: () => this.node,
      openConcord: (node, target) => this.openConcord(node, target),
      announce: (connection) => this.events.emit('connection', connection),
    })
    for (const address of options.bootstrap ?? []) {
      const ma = parseMultiaddr(address)
      const id = peerIdOf(ma)
      if (!id) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `bootstrap address "${address}" has no /p2p/<PeerId>`)
    }
  }

  /** This node's PeerId (after start). */
  get peerId(): string {
    if (!this.localPeer) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'the libp2p transport is not started')
    return this.localPeer
  }

  /** The multiaddrs this node listens on, each ending in `/p2p/<PeerId>`. */
  get addresses(): string[] {
    return this.node?.getMultiaddrs().map((ma) => ma.toString()) ?? []
  }

  /** The libp2p node (after start), for diagnostics; do not stop it directly. */
  get libp2p(): Libp2p | undefined {
    return this.node
  }

  /**
   * The gossipsub side channel (`gossipsub` option); see pubsub.ts.
   * @throws ConcordError `CONCORD_INVALID_ARGUMENT` when gossipsub is off or the transport is not started.
   */
  get pubsub(): PubSubChannel {
    if (!this.gossip) {
      throw new ConcordError(
        ErrorCodes.INVALID_ARGUMENT,
        this.options.gossipsub ? 'the libp2p transport is not started' : 'gossipsub is off (option gossipsub)',
      )
    }
    return this.gossip
  }

  /** PeerIds with at least one open Concord connection. */
  connectedPeers(): string[] {
    return this.book.connectedPeers()
  }

  /** Starts the node with `options.addresses` (idempotent). */
  async start(options?: AbortOptions): Promise<void> {
    await this.ensureStarted(this.options.addresses ?? [], options)
  }

  /**
   * Starts the node listening on `address` (`{ addresses }`, one multiaddr or
   * a list; default {@link DEFAULT_LISTEN_ADDRESSES}); resolves with the first
   * bound multiaddr, ending in `/p2p/<PeerId>`, to give to `dial`.
   * @throws ConcordError `CONCORD_INVALID_ARGUMENT` when the node already
   * started with other addresses (libp2p binds its addresses at start).
   */
  async listen(address?: Libp2pListenAddress, options?: AbortOptions): Promise<string> {
    const requested = listenAddresses(address) ?? [...(this.options.addresses ?? DEFAULT_LISTEN_ADDRESSES)]
    for (const text of requested) parseMultiaddr(text)
    if (this.node || this.starting) {
      const node = await (this.starting ?? Promise.resolve(this.node!))
      const bound = node.getMultiaddrs()
      if (bound.length === 0 || (address !== undefined && !sameAddresses(requested, this.boundConfig))) {
        throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'the libp2p node already started; pass its addresses to the first listen() or to the options')
      }
      return bound[0].toString()
    }
    const node = await this.ensureStarted(requested, options)
    const bound = node.getMultiaddrs()
    if (bound.length === 0) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `libp2p bound none of ${requested.join(', ')}`)
    return bound[0].toString()
  }

  /**
   * Opens a Concord connection to `address`, a multiaddr (ideally ending in
   * `/p2p/<PeerId>`, which is checked by Noise).
   * @throws ConcordError `CONCORD_INVALID_ARGUMENT` (not a multiaddr),
   * `CONCORD_FORBIDDEN` (peer not on the allowlist), `CONCORD_ABORTED`,
   * `CONCORD_TIMEOUT`, `CONCORD_UNREACHABLE` (refused, unreachable, the
   * handshake failed; the cause holds libp2p's error), `CONCORD_CLOSED` (the
   * transport stopped).
   */
  async dial(address: string, options?: AbortOptions): Promise<Connection> {
    const ma = parseMultiaddr(address)
    const id = peerIdOf(ma)
    if (id && !this.admits(id.toString())) {
      this.stats.denied++
      throw new ConcordError(ErrorCodes.FORBIDDEN, this.blocked.has(id.toString()) ? `peer ${id} is blocked` : `peer ${id} is not on the allowlist`)
    }
    const node = await this.ensureStarted(this.options.addresses ?? [], options)
    const key = id?.toString()
    if (key) this.book.beginPending(key)
    try {
      const connection = await this.openConcord(node, ma, options)
      this.stats.dialed++
      const peer = this.book.remember(peerIdFromString(connection.remoteIdentity), id ? [ma] : [])
      peer.forgotten = false
      return connection
    } finally {
      if (key) this.book.endPending(key)
    }
  }

  /**
   * Stops reconnecting to `peerId` (for example after the sync layer refused
   * it); open connections stay open. A later `dial()` to it undoes this.
   */
  forget(peerId: string): void {
    const peer = this.book.get(peerId)
    if (!peer) return
    peer.forgotten = true
    peer.nextAttempt = undefined
  }

  /**
   * Cuts `peerId` off until {@link unblock}: closes its Concord connections,
   * hangs up its libp2p connection, and refuses it (both ways, through the
   * connection gater, as if it were off the allowlist). For partitions in
   * tests and for operators who want a peer out now.
   * @throws ConcordError `CONCORD_INVALID_ARGUMENT` for a string that is not a PeerId.
   */
  async block(peerId: string): Promise<void> {
    const [id] = createAllowlist([peerId])
    this.blocked.add(id)
    const known = this.book.get(id)
    if (known) known.nextAttempt = undefined
    for (const connection of this.book.connectionsOf(id)) connection.close('peer blocked')
    if (this.node) await this.node.hangUp(peerIdFromString(id)).catch(() => undefined)
  }

  /** Admits `peerId` again after {@link block} (the allowlist still applies); reconnects if it is a known peer. */
  unblock(peerId: string): void {
    const [id] = createAllowlist([peerId])
    if (!this.blocked.delete(id)) return
    const known = this.book.get(id)
    if (known && !known.forgotten && !this.stopped) {
      known.delayMs = this.redial?.minDelayMs ?? 0
      this.book.scheduleRedial(known, 0)
    }
  }

  /** PeerIds blocked with {@link block}. */
  get blockedPeers(): string[] {
    return [...this.blocked]
  }

  /** Stops the node: closes every connection, listener and timer (idempotent). */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    if (this.redialTimer) clearInterval(this.redialTimer)
    for (const timer of this.timers) clearTimeout(timer)
    this.timers.clear()
    this.gossip?.stop()
    const node = this.node ?? (this.starting ? await this.starting.catch(() => undefined) : undefined)
    for (const connection of this.book.allConnections()) connection.close('transport stopped')
    await node?.stop()
  }

  // ---- start -------------------------------------------------------------

  private boundConfig: readonly string[] = []

  private ensureStarted(addresses: readonly string[], options?: AbortOptions): Promise<Libp2p<Services>> {
    if (this.stopped) return Promise.reject(new ConcordError(ErrorCodes.CLOSED, 'the libp2p transport is stopped'))
    if (this.node) return Promise.resolve(this.node)
    if (!this.starting) {
      this.boundConfig = addresses
      this.starting = this.startNode(addresses).then(
        (node) => {
          this.node = node
          return node
        },
        (error: unknown) => {
          this.starting = undefined
          throw error
        },
      )
    }
    return raceSignal(this.starting, options?.signal)
  }

  private async startNode(addresses: readonly string[]): Promise<Libp2p<Services>> {
    const privateKey = await resolvePrivateKey(this.options)
    const self = peerIdFromPrivateKey(privateKey).toString()
    const limits = this.limits
    // Always gated: the allowlist (if any) and the peers blocked at run time.
    const allow = { has: (id: string) => id === self || this.admits(id) } satisfies PeerAllowlist
    const node = await createNode({
      options: this.options,
      limits,
      privateKey,
      addresses,
      allow,
      onDenied: () => {
        this.stats.denied++
      },
      addressLimit: this.addressLimit,
    })
    this.localPeer = node.peerId.toString()
    await node.handle(CONCORD_PROTOCOL, (stream, connection) => this.onInboundStream(stream, connection), {
      maxInboundStreams: limits.maxConcordStreams,
      maxOutboundStreams: limits.maxConcordStreams,
    })
    await node.register(CONCORD_PROTOCOL, {
      onConnect: (peerId, connection) => this.onProtocolPeer(peerId, connection),
    })
    node.addEventListener('peer:discovery', (event) => {
      const peer = this.book.remember(event.detail.id, event.detail.multiaddrs)
      if (this.autoConnect && !peer.forgotten && !this.book.hasConcord(peer.id.toString())) this.book.scheduleRedial(peer, 0)
    })
    node.addEventListener('peer:disconnect', (event) => {
      const peer = this.book.get(event.detail.toString())
      if (peer && !peer.forgotten) {
        peer.lost = true
        this.book.scheduleRedial(peer, this.redial?.minDelayMs ?? 0)
      }
    })
    for (const address of this.options.bootstrap ?? []) {
      const ma = parseMultiaddr(address)
      this.book.remember(peerIdOf(ma)!, [ma])
    }
    if (this.options.gossipsub) {
      this.gossip = new GossipChannel(node.services.pubsub!, { allow, maxMessageBytes: limits.maxPubsubMessageBytes })
    }
    try {
      await node.start()
    } catch (error) {
      await Promise.resolve()
        .then(() => node.stop())
        .catch(() => undefined)
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `cannot start libp2p on ${addresses.join(', ')}: ${(error as Error).message}`, { cause: error })
    }
    if (this.stopped) {
      await node.stop()
      throw new ConcordError(ErrorCodes.CLOSED, 'the libp2p transport is stopped')
    }
    if (this.redial) {
      this.redialTimer = setInterval(() => this.book.tick(), Math.max(50, Math.min(this.redial.minDelayMs, 1_000)))
      this.redialTimer.unref?.()
    }
    return node
  }

  // ---- Concord connections ------------------------------------------------

  private async openConcord(node: Libp2p<Services>, target: Multiaddr | PeerId, options?: AbortOptions): Promise<StreamConnection> {
    let stream: Stream
    let connection: Libp2pConnection
    try {
      connection = await node.dial(target, { signal: options?.signal })
      stream = await connection.newStream(CONCORD_PROTOCOL, { signal: options?.signal })
    } catch (error) {
      throw toDialError(error, target, this.stopped, () => {
        this.stats.denied++
      })
    }
    return this.adopt(stream, connection)
  }

  private adopt(stream: Stream, connection: Libp2pConnection): StreamConnection {
    const wrapped = new StreamConnection(stream, connection, {
      maxFrameBytes: this.limits.maxFrameBytes,
      closeTimeoutMs: this.limits.closeTimeoutMs,
      onClosed: (closed) => this.book.closed(closed),
    })
    if (this.stopped) {
      wrapped.close('transport stopped')
      throw new ConcordError(ErrorCodes.CLOSED, 'the libp2p transport is stopped')
    }
    this.carried.add(connection)
    this.book.add(wrapped)
    return wrapped
  }

  private onInboundStream(stream: Stream, connection: Libp2pConnection): void {
    const peer = connection.remotePeer.toString()
    if (this.stopped || !this.admits(peer)) {
      this.stats.denied++
      stream.abort(new ConcordError(ErrorCodes.FORBIDDEN, `peer ${peer} is not on the allowlist`))
      return
    }
    this.book.remember(connection.remotePeer, [])
    const wrapped = this.adopt(stream, connection)
    this.stats.accepted++
    this.events.emit('connection', wrapped)
  }

  /** libp2p connected to a peer whose identify lists our protocol. */
  private onProtocolPeer(peerId: PeerId, connection: Libp2pConnection): void {
    const id = peerId.toString()
    if (this.stopped || !this.admits(id)) return
    const peer = this.book.remember(peerId, [])
    if (!this.autoConnect || peer.forgotten) return
    const delay = this.localPeer! < id ? 0 : this.book.graceMs()
    this.later(delay, () => {
      if (this.stopped || peer.forgotten || this.book.hasConcord(id) || connection.status !== 'open' || this.carried.has(connection)) return
      this.book.beginPending(id)
      connection
        .newStream(CONCORD_PROTOCOL)
        .then((stream) => {
          if (this.book.hasOpenConcord(id) || this.carried.has(connection)) {
            // Someone else won the race while the stream was being negotiated.
            stream.abort(new ConcordError(ErrorCodes.CLOSED, 'duplicate Concord stream'))
            return
          }
          const wrapped = this.adopt(stream, connection)
          this.stats.autoOpened++
          this.events.emit('connection', wrapped)
        })
        .catch(() => {
          // The stream could not be opened (the link is going away, or a
          // timeout under load): the redial loop takes over.
          if (!this.stopped && !this.book.hasOpenConcord(id)) this.book.scheduleRedial(peer, peer.delayMs)
        })
        .finally(() => this.book.endPending(id))
    })
  }

  // ---- helpers ------------------------------------------------------------

  /** Whether `peer` may connect: on the allowlist (if any) and not blocked. */
  private admits(peer: string): boolean {
    return (this.allow === undefined || this.allow.has(peer)) && !this.blocked.has(peer)
  }

  private later(delayMs: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      fn()
    }, delayMs)
    timer.unref?.()
    this.timers.add(timer)
  }
}
