/**
 * The libp2p transport: one libp2p node per Concord peer (TCP and WebSocket
 * transports, Noise, Yamux, Identify; optional bootstrap, mDNS, gossipsub),
 * carrying Concord frames on the `/concord/sync/1.0.0` stream protocol.
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
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { bootstrap } from '@libp2p/bootstrap'
import { gossipsub, type GossipSub } from '@libp2p/gossipsub'
import { identify } from '@libp2p/identify'
import type { Connection as Libp2pConnection, Libp2p, PeerId, PrivateKey, Stream } from '@libp2p/interface'
import { mdns } from '@libp2p/mdns'
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id'
import { tcp } from '@libp2p/tcp'
import { webSockets } from '@libp2p/websockets'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { createLibp2p, type Libp2pOptions } from 'libp2p'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { Emitter } from '../../crdt/emitter.ts'
import { ConcordError, ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { AbortOptions, Connection, Transport, TransportEvents } from '../transport.ts'
import { createAllowlist, createAllowlistGater, type PeerAllowlist } from './allowlist-gater.ts'
import { loadOrCreatePrivateKey } from './key-file.ts'
import { CONCORD_PROTOCOL, DEFAULT_LIMITS, type Libp2pLimits, type Libp2pTransportOptions } from './options.ts'
import { GossipChannel, type PubSubChannel } from './pubsub.ts'
import { StreamConnection } from './stream-connection.ts'

/** Address accepted by {@link Libp2pTransport.listen}. */
export type Libp2pListenAddress = { readonly addresses?: readonly string[] } | string | readonly string[] | undefined

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

interface KnownPeer {
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

type Services = { identify: unknown; pubsub?: GossipSub }

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

  private readonly options: Libp2pTransportOptions
  private readonly allow: Set<string> | undefined
  private readonly autoConnect: boolean
  private readonly redial: { minDelayMs: number; maxDelayMs: number } | undefined
  private node: Libp2p<Services> | undefined
  private starting: Promise<Libp2p<Services>> | undefined
  private stopped = false
  private localPeer: string | undefined
  private gossip: GossipChannel | undefined
  private readonly known = new Map<string, KnownPeer>()
  private readonly concord = new Map<string, Set<StreamConnection>>()
  private readonly pending = new Map<string, number>()
  /** libp2p connections that carried a Concord stream: never auto-opened again (a close on them was meant). */
  private readonly carried = new WeakSet<Libp2pConnection>()
  private readonly timers = new Set<ReturnType<typeof setTimeout>>()
  /** Peers cut off at run time ({@link block}). */
  private readonly blocked = new Set<string>()
  private redialTimer: ReturnType<typeof setInterval> | undefined

  constructor(options: Libp2pTransportOptions = {}) {
    this.options = options
    this.limits = { ...DEFAULT_LIMITS, ...options.limits }
    this.allow = options.allow === undefined ? undefined : createAllowlist(options.allow)
    this.autoConnect = options.autoConnect ?? true
    this.redial = options.redial === false || this.autoConnect === false ? undefined : {
      minDelayMs: options.redial?.minDelayMs ?? 250,
      maxDelayMs: options.redial?.maxDelayMs ?? 15_000,
    }
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
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, this.options.gossipsub ? 'the libp2p transport is not started' : 'gossipsub is off (option gossipsub)')
    }
    return this.gossip
  }

  /** PeerIds with at least one open Concord connection. */
  connectedPeers(): string[] {
    return [...this.concord.entries()].filter(([, set]) => set.size > 0).map(([id]) => id)
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
    if (key) this.beginPending(key)
    try {
      const connection = await this.openConcord(node, ma, options)
      this.stats.dialed++
      const peer = this.remember(peerIdFromString(connection.remoteIdentity), id ? [ma] : [])
      peer.forgotten = false
      return connection
    } finally {
      if (key) this.endPending(key)
    }
  }

  /**
   * Stops reconnecting to `peerId` (for example after the sync layer refused
   * it); open connections stay open. A later `dial()` to it undoes this.
   */
  forget(peerId: string): void {
    const peer = this.known.get(peerId)
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
    const known = this.known.get(id)
    if (known) known.nextAttempt = undefined
    for (const connection of [...(this.concord.get(id) ?? [])]) connection.close('peer blocked')
    if (this.node) await this.node.hangUp(peerIdFromString(id)).catch(() => undefined)
  }

  /** Admits `peerId` again after {@link block} (the allowlist still applies); reconnects if it is a known peer. */
  unblock(peerId: string): void {
    const [id] = createAllowlist([peerId])
    if (!this.blocked.delete(id)) return
    const known = this.known.get(id)
    if (known && !known.forgotten && !this.stopped) {
      known.delayMs = this.redial?.minDelayMs ?? 0
      this.scheduleRedial(known, 0)
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
    for (const set of this.concord.values()) {
      for (const connection of set) connection.close('transport stopped')
    }
    await node?.stop()
  }

  // ---- start -------------------------------------------------------------

  private boundConfig: readonly string[] = []

  private ensureStarted(addresses: readonly string[], options?: AbortOptions): Promise<Libp2p<Services>> {
    if (this.stopped) return Promise.reject(new ConcordError(ErrorCodes.CLOSED, 'the libp2p transport is stopped'))
    if (this.node) return Promise.resolve(this.node)
    if (!this.starting) {
      this.boundConfig = addresses
      this.starting = this.startNode(addresses).then((node) => {
        this.node = node
        return node
      }, (error: unknown) => {
        this.starting = undefined
        throw error
      })
    }
    return raceSignal(this.starting, options?.signal)
  }

  private async startNode(addresses: readonly string[]): Promise<Libp2p<Services>> {
    const privateKey = await this.privateKey()
    const self = peerIdFromPrivateKey(privateKey).toString()
    const limits = this.limits
    // Always gated: the allowlist (if any) and the peers blocked at run time.
    const allow = { has: (id: string) => id === self || this.admits(id) } satisfies PeerAllowlist
    const peerDiscovery: Array<NonNullable<Libp2pOptions['peerDiscovery']>[number]> = []
    if (this.options.bootstrap && this.options.bootstrap.length > 0) {
      peerDiscovery.push(bootstrap({ list: [...this.options.bootstrap], timeout: 10 }) as never)
    }
    if (this.options.mdns) {
      const init = typeof this.options.mdns === 'object' ? this.options.mdns : {}
      peerDiscovery.push(mdns({ interval: init.intervalMs ?? 10_000, serviceTag: init.serviceTag ?? 'concord.local' }) as never)
    }
    const services: Record<string, unknown> = {
      identify: identify({ timeout: limits.dialTimeoutMs }),
    }
    if (this.options.gossipsub) {
      const init = typeof this.options.gossipsub === 'object' ? this.options.gossipsub : {}
      services.pubsub = gossipsub({
        allowPublishToZeroTopicPeers: true,
        emitSelf: false,
        globalSignaturePolicy: 'StrictSign',
        heartbeatInterval: init.heartbeatIntervalMs ?? 1_000,
        floodPublish: init.floodPublish ?? true,
        // Gossipsub scores down peers that share an IP (a Sybil defence for
        // public networks); Concord agents often share one machine or one
        // NAT, and 16 agents on 127.0.0.1 got graylisted. Admission is the
        // allowlist's job, so the colocation penalty is off.
        scoreParams: { IPColocationFactorWeight: 0 },
        maxInboundDataLength: limits.maxPubsubMessageBytes,
        maxInboundStreams: 2,
        maxOutboundStreams: 2,
      })
    }
    const config: Libp2pOptions<Services> = {
      privateKey,
      start: false,
      addresses: { listen: [...addresses] },
      transports: [tcp(), webSockets()],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux({ maxInboundStreams: limits.maxMuxedStreams, maxOutboundStreams: limits.maxMuxedStreams })],
      peerDiscovery,
      services: services as never,
      connectionManager: {
        maxConnections: limits.maxConnections,
        maxParallelDials: limits.maxParallelDials,
        dialTimeout: limits.dialTimeoutMs,
        inboundConnectionThreshold: limits.inboundConnectionThreshold,
        maxIncomingPendingConnections: limits.maxIncomingPendingConnections,
      },
      connectionGater: createAllowlistGater(allow, () => { this.stats.denied++ }),
    }
    let node: Libp2p<Services>
    try {
      node = await createLibp2p<Services>(config)
    } catch (error) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `cannot create the libp2p node: ${(error as Error).message}`, { cause: error })
    }
    this.localPeer = node.peerId.toString()
    await node.handle(CONCORD_PROTOCOL, (stream, connection) => this.onInboundStream(stream, connection), {
      maxInboundStreams: limits.maxConcordStreams,
      maxOutboundStreams: limits.maxConcordStreams,
    })
    await node.register(CONCORD_PROTOCOL, {
      onConnect: (peerId, connection) => this.onProtocolPeer(peerId, connection),
    })
    node.addEventListener('peer:discovery', (event) => {
      const peer = this.remember(event.detail.id, event.detail.multiaddrs)
      if (this.autoConnect && !peer.forgotten && !this.hasConcord(peer.id.toString())) this.scheduleRedial(peer, 0)
    })
    node.addEventListener('peer:disconnect', (event) => {
      const peer = this.known.get(event.detail.toString())
      if (peer && !peer.forgotten) {
        peer.lost = true
        this.scheduleRedial(peer, this.redial?.minDelayMs ?? 0)
      }
    })
    for (const address of this.options.bootstrap ?? []) {
      const ma = parseMultiaddr(address)
      this.remember(peerIdOf(ma)!, [ma])
    }
    if (services.pubsub) {
      this.gossip = new GossipChannel(node.services.pubsub!, { allow, maxMessageBytes: limits.maxPubsubMessageBytes })
    }
    try {
      await node.start()
    } catch (error) {
      await Promise.resolve().then(() => node.stop()).catch(() => undefined)
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `cannot start libp2p on ${addresses.join(', ')}: ${(error as Error).message}`, { cause: error })
    }
    if (this.stopped) {
      await node.stop()
      throw new ConcordError(ErrorCodes.CLOSED, 'the libp2p transport is stopped')
    }
    if (this.redial) {
      this.redialTimer = setInterval(() => this.redialTick(), Math.max(50, Math.min(this.redial.minDelayMs, 1_000)))
      this.redialTimer.unref?.()
    }
    return node
  }

  private async privateKey(): Promise<PrivateKey> {
    if (this.options.privateKey) return this.options.privateKey
    if (this.options.dir !== undefined) return loadOrCreatePrivateKey(this.options.dir)
    return generateKeyPair('Ed25519')
  }

  // ---- Concord connections ------------------------------------------------

  private async openConcord(node: Libp2p<Services>, target: Multiaddr | PeerId, options?: AbortOptions): Promise<StreamConnection> {
    let stream: Stream
    let connection: Libp2pConnection
    try {
      connection = await node.dial(target, { signal: options?.signal })
      stream = await connection.newStream(CONCORD_PROTOCOL, { signal: options?.signal })
    } catch (error) {
      throw this.dialError(error, target)
    }
    return this.adopt(stream, connection)
  }

  private adopt(stream: Stream, connection: Libp2pConnection): StreamConnection {
    const wrapped = new StreamConnection(stream, connection, {
      maxFrameBytes: this.limits.maxFrameBytes,
      closeTimeoutMs: this.limits.closeTimeoutMs,
      onClosed: (closed) => this.onConcordClosed(closed),
    })
    if (this.stopped) {
      wrapped.close('transport stopped')
      throw new ConcordError(ErrorCodes.CLOSED, 'the libp2p transport is stopped')
    }
    this.carried.add(connection)
    const peer = wrapped.remoteIdentity
    let set = this.concord.get(peer)
    if (!set) this.concord.set(peer, (set = new Set()))
    if (wrapped.open) set.add(wrapped)
    const known = this.known.get(peer)
    if (known) {
      known.nextAttempt = undefined
      known.lost = false
    }
    return wrapped
  }

  private onInboundStream(stream: Stream, connection: Libp2pConnection): void {
    const peer = connection.remotePeer.toString()
    if (this.stopped || !this.admits(peer)) {
      this.stats.denied++
      stream.abort(new ConcordError(ErrorCodes.FORBIDDEN, `peer ${peer} is not on the allowlist`))
      return
    }
    this.remember(connection.remotePeer, [])
    const wrapped = this.adopt(stream, connection)
    this.stats.accepted++
    this.events.emit('connection', wrapped)
  }

  private onConcordClosed(connection: StreamConnection): void {
    const peer = connection.remoteIdentity
    const set = this.concord.get(peer)
    set?.delete(connection)
    if (set && set.size === 0) this.concord.delete(peer)
    const known = this.known.get(peer)
    if (!known || !this.redial || this.stopped || known.forgotten || this.hasConcord(peer)) return
    // Reconnect, whoever closed and why (a refusal, a handshake timeout, the
    // link going away). The delay doubles while connections keep ending
    // quickly (a peer that refuses us costs one handshake per maxDelayMs at
    // most) and starts again from minDelayMs after one that lasted.
    const { minDelayMs, maxDelayMs } = this.redial
    if (Date.now() - connection.openedAt >= maxDelayMs) known.delayMs = minDelayMs
    known.lost = true
    this.scheduleRedial(known, known.delayMs)
    known.delayMs = Math.min(maxDelayMs, Math.max(minDelayMs, known.delayMs * 2))
  }

  /** libp2p connected to a peer whose identify lists our protocol. */
  private onProtocolPeer(peerId: PeerId, connection: Libp2pConnection): void {
    const id = peerId.toString()
    if (this.stopped || !this.admits(id)) return
    const peer = this.remember(peerId, [])
    if (!this.autoConnect || peer.forgotten) return
    const delay = this.localPeer! < id ? 0 : this.graceMs()
    this.later(delay, () => {
      if (this.stopped || peer.forgotten || this.hasConcord(id) || connection.status !== 'open' || this.carried.has(connection)) return
      this.beginPending(id)
      connection.newStream(CONCORD_PROTOCOL).then((stream) => {
        if (this.hasOpenConcord(id) || this.carried.has(connection)) {
          // Someone else won the race while the stream was being negotiated.
          stream.abort(new ConcordError(ErrorCodes.CLOSED, 'duplicate Concord stream'))
          return
        }
        const wrapped = this.adopt(stream, connection)
        this.stats.autoOpened++
        this.events.emit('connection', wrapped)
      }).catch(() => {
        // The stream could not be opened (the link is going away, or a
        // timeout under load): the redial loop takes over.
        if (!this.stopped && !this.hasOpenConcord(id)) this.scheduleRedial(peer, peer.delayMs)
      }).finally(() => this.endPending(id))
    })
  }

  // ---- known peers and redial ---------------------------------------------

  private remember(id: PeerId, addrs: readonly Multiaddr[]): KnownPeer {
    const key = id.toString()
    let peer = this.known.get(key)
    if (!peer) {
      peer = { id, addrs: [], nextAttempt: undefined, delayMs: this.redial?.minDelayMs ?? 0, forgotten: false, lost: false }
      this.known.set(key, peer)
    }
    for (const ma of addrs) {
      if (!peer.addrs.some((known) => known.equals(ma))) peer.addrs.push(ma)
    }
    return peer
  }

  private scheduleRedial(peer: KnownPeer, delayMs: number): void {
    if (!this.redial || this.stopped || peer.id.toString() === this.localPeer) return
    if (!this.admits(peer.id.toString())) return
    // The larger PeerId waits longer, so the two sides rarely dial at once.
    const extra = this.localPeer! < peer.id.toString() ? 0 : this.graceMs()
    const at = Date.now() + delayMs + extra
    if (peer.nextAttempt === undefined || peer.nextAttempt > at) peer.nextAttempt = at
  }

  private redialTick(): void {
    if (this.stopped || !this.node) return
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
    const node = this.node!
    const wasLost = peer.lost
    this.beginPending(id)
    try {
      // Tell libp2p every address we know; it also has identify's.
      if (peer.addrs.length > 0) await node.peerStore.merge(peer.id, { multiaddrs: peer.addrs })
      if (this.hasOpenConcord(id) || this.stopped) return
      const connection = await this.openConcord(node, peer.id)
      if (this.hasConcordOtherThan(id, connection)) {
        connection.abort('duplicate Concord stream')
        return
      }
      if (wasLost) this.stats.redialed++
      else this.stats.discoveryDials++
      this.events.emit('connection', connection)
    } catch (error) {
      if (this.stopped) return
      this.stats.redialFailures++
      if (((error as Error).cause as Error | undefined)?.name === 'UnsupportedProtocolError') {
        // A libp2p node that does not speak Concord (found by mDNS, say): leave it alone.
        peer.forgotten = true
        return
      }
      const redial = this.redial!
      peer.delayMs = Math.min(redial.maxDelayMs, Math.max(redial.minDelayMs, peer.delayMs * 2))
      const jitter = 0.75 + Math.random() * 0.5
      if (!this.hasConcord(id) && !peer.forgotten) peer.nextAttempt = Date.now() + peer.delayMs * jitter
    } finally {
      this.endPending(id)
    }
  }

  // ---- helpers ------------------------------------------------------------

  /** Whether `peer` may connect: on the allowlist (if any) and not blocked. */
  private admits(peer: string): boolean {
    return (this.allow === undefined || this.allow.has(peer)) && !this.blocked.has(peer)
  }

  private graceMs(): number {
    return Math.max(250, 2 * (this.redial?.minDelayMs ?? 250))
  }

  private hasConcord(peer: string): boolean {
    return (this.concord.get(peer)?.size ?? 0) > 0 || (this.pending.get(peer) ?? 0) > 0
  }

  private hasOpenConcord(peer: string): boolean {
    return (this.concord.get(peer)?.size ?? 0) > 0
  }

  private hasConcordOtherThan(peer: string, connection: StreamConnection): boolean {
    for (const other of this.concord.get(peer) ?? []) if (other !== connection && other.open) return true
    return false
  }

  private beginPending(peer: string): void {
    this.pending.set(peer, (this.pending.get(peer) ?? 0) + 1)
  }

  private endPending(peer: string): void {
    const count = (this.pending.get(peer) ?? 1) - 1
    if (count <= 0) this.pending.delete(peer)
    else this.pending.set(peer, count)
  }

  private later(delayMs: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer)
      fn()
    }, delayMs)
    timer.unref?.()
    this.timers.add(timer)
  }

  private dialError(error: unknown, target: Multiaddr | PeerId): ConcordError {
    if (isConcordError(error)) return error
    const name = (error as Error)?.name ?? ''
    const message = (error as Error)?.message ?? String(error)
    if (this.stopped) return new ConcordError(ErrorCodes.CLOSED, 'the libp2p transport is stopped', { cause: error })
    if (name === 'AbortError') return new ConcordError(ErrorCodes.ABORTED, `dial of ${target} aborted`, { cause: error })
    if (/denied|gater/i.test(name) || /denied|gater/i.test(message)) {
      this.stats.denied++
      return new ConcordError(ErrorCodes.FORBIDDEN, `dial of ${target} refused by the allowlist`, { cause: error })
    }
    if (name === 'TimeoutError') return new ConcordError(ErrorCodes.TIMEOUT, `dial of ${target} timed out`, { cause: error })
    return new ConcordError(ErrorCodes.UNREACHABLE, `cannot reach ${target}: ${message}`, { cause: error })
  }
}

// ---- module helpers --------------------------------------------------------

function parseMultiaddr(text: string): Multiaddr {
  if (typeof text !== 'string') throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `a multiaddr must be a string, got ${typeof text}`)
  try {
    return multiaddr(text)
  } catch (error) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `"${text}" is not a multiaddr`, { cause: error })
  }
}

function peerIdOf(ma: Multiaddr): PeerId | undefined {
  const value = ma.getComponents().findLast((component) => component.name === 'p2p')?.value
  if (value === undefined) return undefined
  try {
    return peerIdFromString(value)
  } catch (error) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `"${ma}" has an invalid PeerId`, { cause: error })
  }
}

function listenAddresses(address: Libp2pListenAddress): string[] | undefined {
  if (address === undefined) return undefined
  if (typeof address === 'string') return [address]
  if (Array.isArray(address)) return [...(address as readonly string[])]
  const list = (address as { addresses?: readonly string[] }).addresses
  return list === undefined ? undefined : [...list]
}

function sameAddresses(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((text, i) => text === b[i])
}

function raceSignal<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise
  if (signal.aborted) return Promise.reject(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}
