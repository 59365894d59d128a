/**
 * The shapes a peer shows its user: its events (`peer.on(event, listener)`)
 * and its counters (`peer.stats()`). Types only.
 */
import type { WaitingStats } from '../crdt/documents/waiting-room.ts'
import type { ConcordError } from '../crdt/errors.ts'
import type { SessionStats, AdmissionStats } from '../sync/index.ts'
import type { ReconnectingEvent } from './dialer.ts'
import type { GossipStats } from './gossip-fanout.ts'
import type { PresenceStats } from './presence.ts'
import type { YWebsocketStats } from './y-websocket-route.ts'

/** Events of a peer (`peer.on(event, listener)`; README, "Events"). */
export interface PeerEvents extends Record<string, unknown> {
  /** A session with a remote peer completed its handshake. */
  'peer-connected': { readonly agentId: string }
  /** The first anti-entropy with a remote peer is done: we hold what it held then. */
  'peer-synced': { readonly agentId: string }
  /** A session ended. */
  'peer-disconnected': { readonly agentId?: string; readonly reason?: string }
  /** A connection `connect(url)` kept up went down (attempt 0) or a redial of it failed; the next dial is in `delayMs`. */
  reconnecting: ReconnectingEvent
  /** A handshake was refused (either way). */
  refused: { readonly by: 'local' | 'remote'; readonly reason: string; readonly message: string }
  /** A background failure (a change that could not be logged, a transport error). */
  error: { readonly name?: string; readonly error: ConcordError }
  /** A setup that works but is probably not what was meant (`open-access`: listening beyond loopback with no credentials). */
  warning: { readonly kind: 'open-access'; readonly message: string; readonly address: string }
  /**
   * A remote commit was refused and not applied (`by: 'local'`: this peer
   * refused it, e.g. `CONCORD_LIMIT_EXCEEDED`, `CONCORD_FORBIDDEN`;
   * `by: 'remote'`: the remote refused one of ours), with its stable code.
   */
  'write-refused': { readonly by: 'local' | 'remote'; readonly agentId?: string; readonly name: string; readonly code: string; readonly message: string }
}

/** Counters of a peer. */
export interface PeerStats {
  readonly sessions: number
  /** Sums over every session this peer has had. */
  readonly totals: Readonly<SessionStats>
  /** The gossipsub fan-out's counters (libp2p with `gossipsub` only). */
  readonly gossip?: Readonly<GossipStats>
  /** What the admission decided, over every door (sessions, gossip, y-websocket). */
  readonly admission: Readonly<AdmissionStats>
  /** The y-websocket route's counters (once `listen` serves it). */
  readonly yWebsocket?: Readonly<YWebsocketStats>
  /**
   * Document updates waiting for a missing dependency (all names): held now,
   * dropped over a budget (they come again by anti-entropy), released.
   */
  readonly waiting: Readonly<WaitingStats>
  /** The presence table's counters. */
  readonly presence: Readonly<PresenceStats>
}
