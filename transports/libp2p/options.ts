/**
 * Options and limits of the libp2p transport, with the defaults and why.
 */
import type { PrivateKey } from '@libp2p/interface'

/** Stream protocol id that carries Concord frames. */
export const CONCORD_PROTOCOL = '/concord/sync/1.0.0'

/**
 * libp2p limits, set for Concord: tens of agents per mesh, one long-lived
 * Concord stream per pair of peers, frames up to a checkpoint's size.
 */
export interface Libp2pLimits {
  /**
   * Largest Concord frame, in bytes, in either direction (default 16 MiB: a
   * checkpoint of a big document fits; anything larger is refused before it is
   * buffered).
   */
  readonly maxFrameBytes: number
  /**
   * Connections libp2p keeps before pruning (default 128; libp2p's 300 is for
   * DHT nodes; a Concord mesh is tens of agents, and each connection costs a
   * socket, Noise state and Yamux windows).
   */
  readonly maxConnections: number
  /** Dials in flight at once (default 32). */
  readonly maxParallelDials: number
  /**
   * Inbound connections per second from one host before refusing (default
   * 100; libp2p's 5 refuses agents on one machine, which all share
   * 127.0.0.1, when they start together).
   */
  readonly inboundConnectionThreshold: number
  /** Inbound connections still in the Noise/Yamux upgrade at once (default 32). */
  readonly maxIncomingPendingConnections: number
  /**
   * Inbound connections held at once from one remote address, upgrading or
   * upgraded (default 32; beyond it a connection is dropped before Noise).
   * libp2p itself only caps the total (`maxConnections`) and the rate per host.
   */
  readonly maxConnectionsPerAddress: number
  /** An inbound connection must finish its Noise and Yamux upgrade within this, in ms (default 10 000). */
  readonly inboundUpgradeTimeoutMs: number
  /** Time for one dial (socket + Noise + Yamux), in ms (default 10 000). */
  readonly dialTimeoutMs: number
  /**
   * Concord streams per libp2p connection and direction (default 32, libp2p's
   * own default for a protocol): discovery and redial use one per pair of
   * peers, but every `dial()` to the same peer opens another stream on the
   * same libp2p connection; the cap bounds what one peer can hold open.
   */
  readonly maxConcordStreams: number
  /**
   * Yamux streams per connection and direction, all protocols (default 64:
   * Concord's 32 plus identify, ping and gossipsub; Yamux's 1 000 lets one
   * peer hold much memory).
   */
  readonly maxMuxedStreams: number
  /** Largest gossipsub message payload, in bytes (default 1 MiB: live deltas are small). */
  readonly maxPubsubMessageBytes: number
  /** How long a graceful Concord stream close may wait for the remote, in ms (default 5 000). */
  readonly closeTimeoutMs: number
}

/** The defaults of {@link Libp2pLimits}. */
export const DEFAULT_LIMITS: Libp2pLimits = {
  maxFrameBytes: 16 * 1024 * 1024,
  maxConnections: 128,
  maxParallelDials: 32,
  inboundConnectionThreshold: 100,
  maxIncomingPendingConnections: 32,
  maxConnectionsPerAddress: 32,
  inboundUpgradeTimeoutMs: 10_000,
  dialTimeoutMs: 10_000,
  maxConcordStreams: 32,
  maxMuxedStreams: 64,
  maxPubsubMessageBytes: 1024 * 1024,
  closeTimeoutMs: 5_000,
}

/** Reconnection to known peers: exponential backoff with jitter. */
export interface RedialOptions {
  /** First delay after a connection ended, in ms (default 250). */
  readonly minDelayMs?: number | undefined
  /** Largest delay between two attempts, in ms (default 15 000); attempts go on while the transport runs. */
  readonly maxDelayMs?: number | undefined
}

/** Options of {@link createLibp2pTransport}. */
export interface Libp2pTransportOptions {
  /**
   * The peer's data folder: the private key is kept in `<dir>/libp2p-key`
   * (created on first use, mode 0600) so the PeerId is stable across
   * restarts. Omitted (and no `privateKey`): a new identity each run.
   */
  readonly dir?: string | undefined
  /** A private key to use instead of the key file. */
  readonly privateKey?: PrivateKey | undefined
  /**
   * Multiaddrs to listen on when the node starts (also settable by the first
   * `listen()`); default: none before `listen()`.
   */
  readonly addresses?: readonly string[] | undefined
  /** Bootstrap peers: multiaddrs ending in `/p2p/<PeerId>`, dialled at start and redialled when they go away. */
  readonly bootstrap?: readonly string[] | undefined
  /** mDNS discovery on the local network (off by default). */
  readonly mdns?: boolean | { readonly intervalMs?: number; readonly serviceTag?: string } | undefined
  /**
   * PeerIds admitted (enforced by a connection gater); omitted: every peer
   * that completes the Noise handshake.
   */
  readonly allow?: Iterable<string> | undefined
  /** Gossipsub side channel for live deltas (off by default); see `Libp2pTransport.pubsub`. */
  readonly gossipsub?:
    | boolean
    | {
        /** Gossipsub heartbeat (mesh upkeep), in ms (default 1 000). */
        readonly heartbeatIntervalMs?: number
        /**
         * Send our own messages to every subscribed peer, not only to the mesh
         * (default true, gossipsub's default: lower latency, more bytes).
         */
        readonly floodPublish?: boolean
      }
  /**
   * Keep a Concord connection open with every known, admitted peer (default
   * true): open one when libp2p connects to a peer that speaks the protocol
   * (bootstrap, mDNS), and reopen it with backoff when it ends. Such
   * connections are announced with the transport's `connection` event.
   * `false`: only `dial()` and inbound streams make connections.
   */
  readonly autoConnect?: boolean | undefined
  /** Backoff of reconnections; `false` turns them off (and dials of mDNS-found peers; bootstrap peers are still dialled once at start). */
  readonly redial?: RedialOptions | false | undefined
  /** Limits; see {@link Libp2pLimits} for the defaults. */
  readonly limits?: Partial<Libp2pLimits> | undefined
}
