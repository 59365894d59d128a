/**
 * `createPeer()` in Node: the composition root. A {@link Peer} is the
 * platform-neutral {@link PeerCore} (store, replicas, sessions, admission,
 * `transact`, `flush`, history, events) with Node's doors: WebSocket built
 * in (`listen`, `connect`, the y-websocket route), libp2p (`listen({
 * libp2p })`, `connect(multiaddr)`), any other `Connection` through
 * `attach` (the simulated network). The browser's peer is peer/browser.ts.
 */
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import { openStore, type Store } from '../persistence/store.ts'
import type { SyncSession } from '../sync/index.ts'
import { refuseTestHooks, validatePeerOptions, type PeerOptions, type PeerSetup, type ResolvedPeerSetup } from './options.ts'
import { Libp2pLink, type Libp2pListening } from './libp2p-link.ts'
import { validateLibp2pOptions, type PeerLibp2pOptions } from './libp2p-options.ts'
import type { Libp2pTransport } from '../transports/libp2p/libp2p-transport.ts'
import { WebSocketNetwork, type ConnectOptions, type ListenOptions } from './websocket-network.ts'
import { multiaddrHost, openAccessWarning } from './open-access.ts'
import { PeerCore, peerStoreOptions, type PeerEvents, type PeerStats } from './peer-core.ts'

export type { ListenOptions, ConnectOptions, HttpRoute } from './websocket-network.ts'
export type { ChangeOptions } from './provenance.ts'
export { PRESENCE_TABLE_LIMITS, type PresenceInfo, type PresenceUpdate, type PresenceStats } from './presence.ts'
export type { ReconnectingEvent } from './dialer.ts'
export type { FlushOptions, FlushProgress } from './flush.ts'
export { FlushTimeoutError } from './flush.ts'
export { PeerCore, type PeerEvents, type PeerStats } from './peer-core.ts'
export type { PeerStatus, PeerSessionStatus } from './status.ts'

/** Options of {@link Peer.listen} for libp2p. */
export interface Libp2pListenOptions {
  /**
   * The libp2p node: `addresses` to listen on (default
   * `/ip4/127.0.0.1/tcp/0`), `bootstrap`, `mdns`, `allow`, `gossipsub` (merged
   * over `createPeer({ libp2p })`).
   */
  readonly libp2p: PeerLibp2pOptions
  readonly signal?: AbortSignal | undefined
}

/** Creates a peer: opens its store and gets it ready to sync. */
export async function createPeer(options: PeerOptions): Promise<Peer> {
  refuseTestHooks(options, 'createPeer')
  return openPeer(options)
}

/** @internal `createPeer` with the test hooks too (concord-crdt/testing's `createTestPeer`). */
export async function openPeer(options: PeerSetup): Promise<Peer> {
  const setup = validatePeerOptions(options)
  if (setup.libp2p !== undefined) validateLibp2pOptions(setup.libp2p, 'createPeer')
  const store = await openStore(peerStoreOptions(setup))
  return new Peer(setup, store)
}

/** A Concord peer in Node: typed replicas, persisted and synced. See {@link createPeer}. */
export class Peer extends PeerCore {
  /** The WebSocket side: listener, connections dialed by {@link connect}, y-websocket route. */
  private readonly websocket: WebSocketNetwork
  private link: Libp2pLink | undefined

  constructor(options: ResolvedPeerSetup, store: Store) {
    super(options, store)
    this.websocket = new WebSocketNetwork({
      agentId: options.agentId,
      maxFrameBytes: options.maxFrameBytes,
      store,
      host: this.host,
      admission: this.admission,
      attach: (connection, attachOptions) => this.attach(connection, attachOptions),
      onInbound: (connection) => {
        if (!this.isClosing) this.attach(connection)
      },
      onReconnecting: (event) => this.events.emit('reconnecting', event),
    })
  }

  // ------------------------------------------------------------ network

  /**
   * With `{ libp2p }`: starts this peer's libp2p node (key kept in `dir`,
   * so the PeerId is stable) and resolves with its PeerId and multiaddrs
   * (each ending in `/p2p/<PeerId>`). See README, "libp2p".
   * @throws ConcordError `CONCORD_INVALID_ARGUMENT` (bad options, or options
   * other than `addresses` once the node started).
   */
  listen(options: Libp2pListenOptions): Promise<Libp2pListening>
  /**
   * Serves the Concord protocol over WebSocket (and stock y-websocket
   * clients at `/yjs/<room>`). Resolves with the URL to connect to.
   */
  listen(options?: ListenOptions): Promise<{ url: string; port: number }>
  async listen(options: ListenOptions | Libp2pListenOptions = {}): Promise<{ url: string; port: number } | Libp2pListening> {
    this.checkOpen()
    // Remotes will list our names: the index loads meanwhile, not when the first one asks.
    this.store.preloadNames()
    if ('libp2p' in options && options.libp2p !== undefined) {
      const extra = Object.keys(options).filter((key) => key !== 'libp2p' && key !== 'signal')
      if (extra.length > 0) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `listen: give either libp2p or ${extra.join(', ')} (one transport per call)`)
      const listening = await this.libp2pLink().listen(options.libp2p, options.signal)
      if (!this.requiresCredentials() && (options.libp2p.allow ?? this.options.libp2p?.allow) === undefined) {
        this.warn(
          openAccessWarning(
            listening.multiaddrs.map((ma) => multiaddrHost(ma) ?? ma),
            'libp2p, no allow list',
          ),
        )
      }
      return listening
    }
    this.checkUnboundDoor('listen')
    let websocket = options as ListenOptions
    if (websocket.ui !== undefined && websocket.ui !== false) {
      // Loaded on demand: a peer that serves no page loads none of it.
      const { inspectorRoute } = await import('../inspector/route.ts')
      const ui = inspectorRoute(this, websocket.ui === true ? {} : websocket.ui)
      websocket = { ...websocket, routes: [...(websocket.routes ?? []), ui] }
    }
    const listening = await this.websocket.listen(websocket)
    if (!this.requiresCredentials()) this.warn(openAccessWarning([websocket.host ?? '127.0.0.1'], 'WebSocket'))
    return listening
  }

  private warn(warning: PeerEvents['warning'] | undefined): void {
    if (warning) this.events.emit('warning', warning)
  }

  /**
   * Connects to a peer's WebSocket URL (`ws://host:port/concord` or
   * `wss://`) and resolves when the first handshake completes. That first
   * attempt (one dial, one handshake, within `timeoutMs`, default 15 s) is
   * the answer: an address that is not a WebSocket URL rejects at once with
   * `CONCORD_INVALID_ARGUMENT`; a failed dial or a connection closed before
   * the handshake with `CONCORD_UNREACHABLE` (saying what answered: nothing,
   * an HTTP status, the path Concord listens at); refused credentials, or a
   * `wss://` server whose certificate is not trusted (`tls.ca` trusts a
   * private CA or a self-signed certificate), with `CONCORD_AUTH_FAILED`; no
   * handshake in time with `CONCORD_TIMEOUT`. Once connected, the connection
   * is kept up: redialled with exponential backoff and jitter
   * (`reconnecting` events), until the remote refuses the credentials or
   * `disconnect(url)`.
   *
   * A multiaddr (starts with `/`, ends in `/p2p/<PeerId>`) is dialled over
   * libp2p instead (starting a dial-only node if `listen({ libp2p })` was not
   * called); the libp2p transport redials the peer by itself from then on.
   * It rejects at once when the first dial fails (`CONCORD_UNREACHABLE`,
   * `CONCORD_FORBIDDEN`, `CONCORD_TIMEOUT`, `CONCORD_INVALID_ARGUMENT`).
   */
  async connect(url: string, options: ConnectOptions = {}): Promise<void> {
    this.checkOpen()
    this.store.preloadNames()
    if (typeof url === 'string' && url.startsWith('/')) return this.libp2pLink().connect(url, options)
    return this.websocket.connect(url, options)
  }

  /**
   * Stops keeping up the connection(s) this peer dialed to `url` with
   * {@link connect} and closes them (the sessions end; a `connect` still
   * waiting for its first handshake rejects with `CONCORD_ABORTED`). Call
   * `connect(url)` again to restore it. Returns the number of dialed
   * connections stopped (0 if none).
   */
  disconnect(url: string): number {
    this.checkOpen()
    if (typeof url === 'string' && url.startsWith('/')) return this.link?.disconnect(url) ?? 0
    return this.websocket.disconnect(url)
  }

  /** Counters: bytes and frames exchanged, malformed input dropped, and more. */
  override stats(): PeerStats {
    const gossip = this.link?.gossipStats
    const yWebsocket = this.websocket.yWebsocketStats
    return { ...super.stats(), ...(gossip ? { gossip } : {}), ...(yWebsocket ? { yWebsocket } : {}) }
  }

  /**
   * This peer's libp2p transport, once `listen({ libp2p })` or
   * `connect(multiaddr)` created it: `peerId`, `addresses`, `stats`,
   * `connectedPeers()`, `block(peerId)` / `unblock(peerId)`. Do not stop it
   * directly (`close()` does).
   */
  get libp2p(): Libp2pTransport | undefined {
    return this.link?.transport
  }

  // libp2p first: its transport would otherwise reopen connections to a closing peer.
  protected override async stopDialing(): Promise<void> {
    await this.link?.stop()
    this.websocket.stopReconnecting()
  }

  protected override async stopTransports(): Promise<void> {
    await this.websocket.stop()
  }

  protected override needsPush(session: SyncSession): boolean {
    return this.link?.needsPush(session) ?? false
  }

  private libp2pLink(): Libp2pLink {
    if (!this.link) {
      if (this.options.libp2p !== undefined) validateLibp2pOptions(this.options.libp2p, 'createPeer')
      this.link = new Libp2pLink(
        {
          options: this.options,
          strictIdentities: this.identityProof === 'libp2p',
          host: this.host,
          dialHost: this.dialHost,
          admission: this.admission,
          attach: (connection, options) => this.attachWith(connection, options),
          onError: (error) => this.events.emit('error', { error }),
        },
        this.options.libp2p,
      )
    }
    return this.link
  }
}
