/**
 * The libp2p options of a peer (`createPeer({ libp2p })` and
 * `peer.listen({ libp2p })`), with their validation. The transport itself is
 * in transports/libp2p/; this file only picks what a peer exposes.
 */
import type { PrivateKey } from '@libp2p/interface'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { Libp2pLimits, RedialOptions } from '../transports/libp2p/options.ts'

/** Gossipsub fan-out of live deltas; see README, "libp2p". */
export interface PeerGossipOptions {
  /**
   * The group whose peers share one live topic, `/concord/live/1/<group>`
   * (default `default`). Peers in other groups still sync over direct
   * streams; only the fan-out is per group.
   */
  readonly group?: string | undefined
  /** Gossipsub heartbeat (mesh upkeep), ms (default 1 000). */
  readonly heartbeatIntervalMs?: number | undefined
  /**
   * Periodic anti-entropy of libp2p sessions while gossipsub is on, ms
   * (default 5 000; `sync.antiEntropyIntervalMs` wins when set). Gossipsub
   * is best effort: this, a pull on every gap in a publisher's numbering,
   * and the anti-entropy of every (re)connection are what guarantee that
   * nothing is missed.
   */
  readonly antiEntropyIntervalMs?: number | undefined
}

/** libp2p options of a peer. */
export interface PeerLibp2pOptions {
  /** Multiaddrs to listen on (default `/ip4/127.0.0.1/tcp/0`); used by `listen`. */
  readonly addresses?: readonly string[] | undefined
  /** Multiaddrs ending in `/p2p/<PeerId>`: dialled at start and redialled when they go away. */
  readonly bootstrap?: readonly string[] | undefined
  /** mDNS discovery on the local network (default off). */
  readonly mdns?: boolean | { readonly intervalMs?: number; readonly serviceTag?: string } | undefined
  /** PeerIds admitted (a connection gater; default: anyone who completes Noise). */
  readonly allow?: Iterable<string> | undefined
  /**
   * Concord ids bound to libp2p PeerIds, `{ concordId: PeerId }`: a libp2p
   * session that claims a listed id must come from its PeerId (Noise proves
   * it), and a listed PeerId must claim its own id. When no per-peer secret
   * proves ids (`auth.accept`), these bindings are what does: a libp2p peer
   * that is not listed is then refused, and WebSocket is refused at
   * `listen` (it carries no PeerId). Give them to `createPeer({ libp2p })`.
   */
  readonly identities?: Readonly<Record<string, string>> | undefined
  /** Fan live deltas out with gossipsub (default off: live deltas go over the direct streams). */
  readonly gossipsub?: boolean | PeerGossipOptions | undefined
  /** The libp2p key (default: kept in `<dir>/libp2p-key`, ephemeral for an in-memory peer). */
  readonly privateKey?: PrivateKey | undefined
  /** Backoff of reconnections (see transports/libp2p/README.md). */
  readonly redial?: RedialOptions | false | undefined
  /** Connection, stream and frame limits (see transports/libp2p/README.md). */
  readonly limits?: Partial<Libp2pLimits> | undefined
}

/** Default gossip group. */
export const DEFAULT_GOSSIP_GROUP = 'default'

/** The live topic of a gossip group. */
export function gossipTopic(group: string = DEFAULT_GOSSIP_GROUP): string {
  return `/concord/live/1/${group}`
}

/**
 * Checks what a user can get wrong in {@link PeerLibp2pOptions} (the
 * transport checks multiaddrs and PeerIds when it starts).
 * @throws ConcordError `CONCORD_INVALID_ARGUMENT`.
 */
export function validateLibp2pOptions(options: unknown, where: string): asserts options is PeerLibp2pOptions {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `${where}: libp2p must be an object ({ addresses, bootstrap, mdns, allow, gossipsub })`)
  }
  const o = options as PeerLibp2pOptions
  for (const key of ['addresses', 'bootstrap'] as const) {
    const list = o[key]
    if (list !== undefined && (!Array.isArray(list) || list.some((item) => typeof item !== 'string' || !item.startsWith('/')))) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `${where}: libp2p.${key} must be a list of multiaddrs (strings starting with '/')`)
    }
  }
  if (o.allow !== undefined && (typeof o.allow === 'string' || typeof (o.allow as Iterable<string>)[Symbol.iterator] !== 'function')) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `${where}: libp2p.allow must be a list of PeerIds`)
  }
  if (o.identities !== undefined) {
    const ids = o.identities as unknown
    if (ids === null || typeof ids !== 'object' || Array.isArray(ids) || Object.values(ids).some((peer) => typeof peer !== 'string' || peer.length === 0)) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `${where}: libp2p.identities must be an object { concordId: PeerId }`)
    }
    const seen = new Map<string, string>()
    for (const [id, peer] of Object.entries(ids as Record<string, string>)) {
      const other = seen.get(peer)
      if (other !== undefined)
        throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `${where}: libp2p.identities binds "${other}" and "${id}" to one PeerId ${peer}`)
      seen.set(peer, id)
    }
  }
  const gossip = o.gossipsub
  if (gossip !== undefined && typeof gossip !== 'boolean') {
    if (gossip === null || typeof gossip !== 'object')
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `${where}: libp2p.gossipsub must be a boolean or an object`)
    if (gossip.group !== undefined && (typeof gossip.group !== 'string' || !/^[\w.-]{1,64}$/.test(gossip.group))) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `${where}: libp2p.gossipsub.group must be 1 to 64 letters, digits, '_', '-' or '.'`)
    }
    for (const key of ['heartbeatIntervalMs', 'antiEntropyIntervalMs'] as const) {
      const value = gossip[key]
      if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
        throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `${where}: libp2p.gossipsub.${key} must be a number > 0`)
      }
    }
  }
}
