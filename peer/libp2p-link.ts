/**
 * A peer's libp2p side: one libp2p transport (created on the first
 * `listen({ libp2p })` or `connect(multiaddr)`), its sessions, and the
 * optional gossipsub fan-out of live deltas.
 *
 * - The libp2p key lives in the peer's `dir` (`<dir>/libp2p-key`), so the
 *   PeerId is stable across restarts; an in-memory peer gets an ephemeral key.
 * - Every Concord connection the transport makes (inbound, redialled,
 *   opened after discovery) is attached to the peer; the transport
 *   reconnects known peers by itself. A peer refused for good (credentials
 *   or protocol version) is forgotten, so it is not redialled.
 * - Credentials: a session with a peer this one chose to dial (`connect`,
 *   `bootstrap`) is checked with `auth.acceptDialed`, every other with
 *   `auth.accept` (either side of a libp2p pair may open the stream, so the
 *   stream's direction says nothing about who connected to whom).
 * - With gossipsub, sessions skip the live commits gossip carries to their
 *   remote (see gossip-fanout.ts) and run periodic anti-entropy; a `flush({
 *   acks })` first asks such sessions for a fresh anti-entropy round, so the
 *   acknowledgement covers what gossip delivered.
 * - Identities: each session's proofs are bound to both PeerIds (a proof
 *   cannot be relayed from another connection), and with
 *   `libp2p.identities` the Concord id claimed in HELLO must be the one
 *   bound to the PeerId Noise proved.
 */
import { Encoder } from '../crdt/codec.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { Admission, SyncHost, SyncSession } from '../sync/index.ts'
import type { Libp2pTransport } from '../transports/libp2p/libp2p-transport.ts'
import type { Connection } from '../transports/transport.ts'
import { GossipFanout, type GossipStats } from './gossip-fanout.ts'
import { overlayHost } from './host-overlay.ts'
import { gossipTopic, validateLibp2pOptions, type PeerLibp2pOptions } from './libp2p-options.ts'
import type { ResolvedPeerSetup, SyncTuning } from './options.ts'

/** What the link needs of its peer. */
export interface Libp2pLinkContext {
  readonly options: ResolvedPeerSetup
  /** `libp2p.identities` is the only proof of ids: a PeerId it does not list is refused. */
  readonly strictIdentities?: boolean
  /** The host of sessions with peers that connected to this one (`auth.accept`). */
  readonly host: SyncHost
  /** The host of sessions with peers this one dialed (`auth.acceptDialed`). */
  readonly dialHost: SyncHost
  /** The peer's admission (what gossip units may write, who may read what is published or relayed). */
  readonly admission: Admission
  /** Attaches a session to the peer. */
  attach(connection: Connection, options: { token?: string; host: SyncHost; sync?: Partial<SyncTuning>; channelBinding?: Uint8Array }): SyncSession
  /** Reports a background failure. */
  onError(error: ConcordError): void
}

/** Result of `peer.listen({ libp2p })`. */
export interface Libp2pListening {
  /** This peer's libp2p PeerId. */
  readonly peerId: string
  /** Every bound multiaddr, each ending in `/p2p/<PeerId>`: give one to `connect` or `bootstrap`. */
  readonly multiaddrs: string[]
}

const DEFAULT_GOSSIP_ANTI_ENTROPY_MS = 5_000

/** See the module comment. */
export class Libp2pLink {
  private readonly ctx: Libp2pLinkContext
  private options: PeerLibp2pOptions
  private transportValue: Libp2pTransport | undefined
  private ready: Promise<Libp2pTransport> | undefined
  private fanout: GossipFanout | undefined
  /** Tokens given to `connect`, by remote PeerId (used again on every redial). */
  private readonly tokens = new Map<string, string>()
  /** PeerIds this peer chose to dial (`connect`, `bootstrap`). */
  private readonly chosen = new Set<string>()
  private readonly sessions = new Map<SyncSession, string>()
  private readonly waiters = new Map<string, Set<{ resolve: () => void; reject: (error: Error) => void }>>()
  private stopped = false

  constructor(ctx: Libp2pLinkContext, options: PeerLibp2pOptions = {}) {
    this.ctx = ctx
    this.options = options
  }

  /** The transport, once created. */
  get transport(): Libp2pTransport | undefined {
    return this.transportValue
  }

  /** Counters of the gossip fan-out (undefined without gossipsub). */
  get gossipStats(): Readonly<GossipStats> | undefined {
    return this.fanout ? { ...this.fanout.stats } : undefined
  }

  /** Starts the node listening (merging `options` over the peer's `libp2p` options). */
  async listen(options: PeerLibp2pOptions, signal?: AbortSignal): Promise<Libp2pListening> {
    validateLibp2pOptions(options, 'listen')
    if (this.ready) {
      const { addresses, ...rest } = options
      if (Object.keys(rest).length > 0) {
        throw new ConcordError(
          ErrorCodes.INVALID_ARGUMENT,
          'listen: the libp2p node already started; give bootstrap, allow, gossipsub ... to the first listen() or to createPeer({ libp2p })',
        )
      }
      const transport = await this.ready
      if (addresses !== undefined) await transport.listen({ addresses }, { signal })
      if (transport.addresses.length === 0) {
        throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'listen: the libp2p node started dial-only (connect before listen); call listen({ libp2p }) first')
      }
      return { peerId: transport.peerId, multiaddrs: transport.addresses }
    }
    this.options = { ...this.options, ...options }
    const transport = await this.start(this.options.addresses ?? ['/ip4/127.0.0.1/tcp/0'], signal)
    return { peerId: transport.peerId, multiaddrs: transport.addresses }
  }

  /**
   * Dials `address` (a multiaddr ending in `/p2p/<PeerId>`) and resolves once
   * the first handshake with that peer completes; the transport keeps the
   * connection up from then on.
   */
  async connect(address: string, options: { token?: string; signal?: AbortSignal } = {}): Promise<void> {
    if (!this.ready) await checkMultiaddr(address) // a typo must not start a dial-only node (listen would then be refused)
    const transport = await (this.ready ?? this.start(undefined, options.signal))
    const connection = await transport.dial(address, { signal: options.signal })
    const peer = connection.remoteIdentity!
    this.chosen.add(peer)
    if (options.token !== undefined) this.tokens.set(peer, options.token)
    const opened = this.waitForOpen(peer, address, options.signal)
    this.onConnection(connection, transport)
    await opened
  }

  /**
   * Stops keeping up the connection with the peer of `address` and closes
   * its sessions; returns how many closed. The remote may dial again: to
   * cut a peer off, use `peer.libp2p.block(peerId)`.
   */
  disconnect(address: string): number {
    const peer = /\/p2p\/([^/]+)$/.exec(address)?.[1]
    if (!peer || !this.transportValue) return 0
    this.transportValue.forget(peer)
    this.chosen.delete(peer)
    this.rejectWaiters(peer, new ConcordError(ErrorCodes.ABORTED, `disconnected from ${address} before the first handshake`))
    let closed = 0
    for (const [session, remote] of [...this.sessions]) {
      if (remote !== peer) continue
      session.close('disconnected')
      closed++
    }
    return closed
  }

  /** Sessions whose live commits gossip may carry: a `flush({ acks })` asks them for a fresh anti-entropy round first. */
  needsPush(session: SyncSession): boolean {
    return this.fanout !== undefined && this.sessions.has(session)
  }

  /** Stops the transport (first: it would otherwise reopen connections to a closing peer), then the fan-out. */
  async stop(): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    const transport = this.transportValue ?? (this.ready ? await this.ready.catch(() => undefined) : undefined)
    await transport?.stop()
    this.fanout?.stop()
    for (const peer of [...this.waiters.keys()]) this.rejectWaiters(peer, new ConcordError(ErrorCodes.CLOSED, 'peer closing'))
  }

  // ---- internals ----------------------------------------------------------

  private start(addresses: readonly string[] | undefined, signal?: AbortSignal): Promise<Libp2pTransport> {
    if (this.stopped) return Promise.reject(new ConcordError(ErrorCodes.CLOSED, 'peer closing'))
    validateLibp2pOptions(this.options, 'createPeer')
    this.ready ??= this.create(addresses, signal).catch((error: unknown) => {
      this.ready = undefined
      throw error
    })
    return this.ready
  }

  private async create(addresses: readonly string[] | undefined, signal?: AbortSignal): Promise<Libp2pTransport> {
    const { createLibp2pTransport } = await import('../transports/libp2p/index.ts')
    const { options } = this
    const peerOptions = this.ctx.options
    const gossip = options.gossipsub
    const transport = createLibp2pTransport({
      dir: options.privateKey ? undefined : peerOptions.dir,
      privateKey: options.privateKey,
      bootstrap: options.bootstrap,
      mdns: options.mdns,
      allow: options.allow,
      gossipsub: gossip ? { heartbeatIntervalMs: typeof gossip === 'object' ? gossip.heartbeatIntervalMs : undefined } : false,
      redial: options.redial,
      limits: options.limits,
    })
    for (const address of options.bootstrap ?? []) {
      const peer = /\/p2p\/([^/]+)$/.exec(address)?.[1]
      if (peer) this.chosen.add(peer)
    }
    transport.events.on('connection', (connection) => {
      if (this.stopped) connection.close('peer closing')
      else this.onConnection(connection, transport)
    })
    try {
      if (addresses) await transport.listen({ addresses }, { signal })
      else await transport.start({ signal })
    } catch (error) {
      await transport.stop().catch(() => undefined)
      throw error
    }
    if (this.stopped) {
      await transport.stop()
      throw new ConcordError(ErrorCodes.CLOSED, 'peer closing')
    }
    if (gossip) {
      const auth = peerOptions.auth
      this.fanout = new GossipFanout({
        channel: transport.pubsub,
        topic: gossipTopic(typeof gossip === 'object' ? gossip.group : undefined),
        host: this.ctx.host,
        admission: this.ctx.admission,
        agent: peerOptions.agentId,
        requireVerifiedOrigin: auth?.accept !== undefined || auth?.token !== undefined || options.identities !== undefined,
        maxMessageBytes: transport.limits.maxPubsubMessageBytes,
        pull: (peer) => this.pull(peer),
        onError: (error) => this.ctx.onError(error),
      })
    }
    this.transportValue = transport
    return transport
  }

  /** Attaches a Concord connection of the transport to the peer. */
  private onConnection(connection: Connection, transport: Libp2pTransport): void {
    const peer = connection.remoteIdentity!
    const base = this.chosen.has(peer) ? this.ctx.dialHost : this.ctx.host
    const fanout = this.fanout
    const gossip = this.options.gossipsub
    const withGossip = fanout
      ? overlayHost(base, {
          // Versions are read after the gossip units received so far are applied and durable.
          list: async () => {
            await fanout.idle()
            return base.list()
          },
          ...(base.items
            ? {
                items: async () => {
                  await fanout.idle()
                  return base.items!()
                },
              }
            : {}),
          // Live commits that gossip carries to this remote are not sent twice.
          subscribe: (listener) =>
            base.subscribe((commit) => {
              if (!fanout.carriesTo(commit, peer)) listener(commit)
            }),
        })
      : base
    // The Concord id claimed in HELLO must be the one bound to the PeerId Noise proved.
    const host =
      this.options.identities === undefined
        ? withGossip
        : overlayHost(withGossip, {
            authenticate: async (remote, presented) => this.mayClaim(peer, remote) && (await withGossip.authenticate(remote, presented)),
          })
    const tuning = this.ctx.options.sync
    const antiEntropyIntervalMs =
      fanout && tuning?.antiEntropyIntervalMs === undefined
        ? ((typeof gossip === 'object' ? gossip.antiEntropyIntervalMs : undefined) ?? DEFAULT_GOSSIP_ANTI_ENTROPY_MS)
        : undefined
    const session = this.ctx.attach(connection, {
      token: this.tokens.get(peer),
      host,
      channelBinding: channelBinding(transport.peerId, peer),
      sync: antiEntropyIntervalMs !== undefined ? { antiEntropyIntervalMs } : undefined,
    })
    this.sessions.set(session, peer)
    session.events.once('open', ({ agentId }) => {
      fanout?.identify(peer, agentId)
      for (const waiter of this.takeWaiters(peer)) waiter.resolve()
    })
    session.events.once('refused', ({ by, reason, message }) => {
      if (reason !== 'auth' && reason !== 'version') return
      // Refused for good: no redial (it would cost a handshake every backoff period).
      this.transportValue?.forget(peer)
      if (by === 'remote') {
        const code = reason === 'auth' ? ErrorCodes.AUTH_FAILED : ErrorCodes.UNSUPPORTED_VERSION
        this.rejectWaiters(peer, new ConcordError(code, `${peer} refused: ${message}`))
      }
    })
    session.events.once('close', () => this.sessions.delete(session))
  }

  /**
   * Whether the libp2p peer `peer` may claim the Concord id `claimed`
   * (`libp2p.identities`): a bound id only from its PeerId, a bound PeerId
   * only its id; an unbound pair only when per-peer secrets prove ids.
   */
  private mayClaim(peer: string, claimed: string): boolean {
    const identities = this.options.identities ?? {}
    if (Object.hasOwn(identities, claimed)) return identities[claimed] === peer
    if (Object.values(identities).includes(peer)) return false
    return this.ctx.strictIdentities !== true
  }

  private waitForOpen(peer: string, address: string, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let set = this.waiters.get(peer)
      if (!set) this.waiters.set(peer, (set = new Set()))
      const onAbort = () => finish(new ConcordError(ErrorCodes.ABORTED, `connect to ${address} aborted`))
      const finish = (error?: Error) => {
        set.delete(waiter)
        signal?.removeEventListener('abort', onAbort)
        if (error) reject(error)
        else resolve()
      }
      const waiter = { resolve: () => finish(), reject: (error: Error) => finish(error) }
      set.add(waiter)
      if (signal?.aborted) return onAbort()
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  private takeWaiters(peer: string): Array<{ resolve: () => void; reject: (error: Error) => void }> {
    const set = this.waiters.get(peer)
    this.waiters.delete(peer)
    return set ? [...set] : []
  }

  private rejectWaiters(peer: string, error: Error): void {
    for (const waiter of this.takeWaiters(peer)) waiter.reject(error)
  }

  /** Anti-entropy (our VERSIONS) from the session with `peer`, else from one open libp2p session. */
  private pull(peer: string | undefined): void {
    let fallback: SyncSession | undefined
    for (const [session, remote] of this.sessions) {
      if (session.state !== 'open') continue
      if (remote === peer) return session.pull()
      fallback ??= session
    }
    fallback?.pull()
  }
}

/**
 * The channel binding of a libp2p session: both PeerIds (Noise proved them),
 * in one order both ends agree on. A proof made on one connection does not
 * verify on another, so a peer cannot relay another's proof.
 */
function channelBinding(local: string, remote: string): Uint8Array {
  const [first, second] = local < remote ? [local, remote] : [remote, local]
  return new Encoder(2 * 64).writeString('libp2p').writeString(first).writeString(second).finish()
}

/** Throws `CONCORD_INVALID_ARGUMENT` unless `address` is a multiaddr whose `/p2p/` part (if any) is a PeerId. */
async function checkMultiaddr(address: string): Promise<void> {
  const [{ multiaddr }, { peerIdFromString }] = await Promise.all([import('@multiformats/multiaddr'), import('@libp2p/peer-id')])
  try {
    const ma = multiaddr(address)
    const id = ma.getComponents().findLast((component) => component.name === 'p2p')?.value
    if (id !== undefined) peerIdFromString(id)
  } catch (error) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `"${address}" is not a multiaddr with a valid PeerId`, { cause: error })
  }
}
