/**
 * `peer.status()`: what a person debugging a peer looks at (the inspector
 * page shows it): the durability mode and the last fsync, and each session
 * with its sync state, how far behind the remote is on our commits (in
 * commits and estimated bytes), when it last acknowledged, and what was
 * refused or malformed on it. Read-only; computed on each call.
 */
import type { DurabilityStatus } from '../persistence/store.ts'
import type { SessionState, SyncSession } from '../sync/index.ts'

/** The sync state of one session of a peer. */
export interface PeerSessionStatus {
  /** The remote's id once its HELLO was accepted (null during the handshake). */
  readonly agentId: string | null
  readonly state: SessionState
  /** Whether the first anti-entropy with the remote is done (we hold what it held then). */
  readonly synced: boolean
  /** When the session was attached and when its handshake completed (wall clock, ms; null: not yet). */
  readonly startedAt: number
  readonly openedAt: number | null
  /** Our commits the remote has not acknowledged (sent or queued), and their estimated bytes on the wire. */
  readonly lag: { readonly commits: number; readonly bytes: number }
  /** Highest seq of ours sent and acknowledged on this session. */
  readonly sentSeq: number
  readonly ackedSeq: number
  /** When the remote last acknowledged a new commit of ours (the session's clock, ms; null: never). */
  readonly lastAckAt: number | null
  /** Remote commits this peer refused, and ours the remote refused. */
  readonly refusedWrites: number
  readonly rejectedByRemote: number
  /** Frames that did not decode or broke a limit. */
  readonly malformed: number
  readonly bytesIn: number
  readonly bytesOut: number
  readonly commitsIn: number
  readonly commitsOut: number
}

/** What {@link PeerCore.status} returns. */
export interface PeerStatus {
  /** The peer's agent id. */
  readonly agentId: string
  /** Wall clock of the peer when the status was taken, ms. */
  readonly now: number
  readonly durability: DurabilityStatus
  /** Every session, in the order they were attached. */
  readonly sessions: readonly PeerSessionStatus[]
}

/** Times a peer records about each session. */
export interface SessionTimes {
  readonly startedAt: number
  openedAt?: number
  syncedAt?: number
}

/** The status of one session. */
export function sessionStatus(session: SyncSession, times: SessionTimes | undefined, now: number): PeerSessionStatus {
  const stats = session.stats
  return {
    agentId: session.remoteAgentId ?? null,
    state: session.state,
    synced: times?.syncedAt !== undefined,
    startedAt: times?.startedAt ?? now,
    openedAt: times?.openedAt ?? null,
    lag: session.lag,
    sentSeq: session.sentSeq,
    ackedSeq: session.ackedSeq,
    lastAckAt: session.lastAckAt ?? null,
    refusedWrites: stats.refusedWrites,
    rejectedByRemote: stats.rejectedByRemote,
    malformed: stats.malformed,
    bytesIn: stats.bytesIn,
    bytesOut: stats.bytesOut,
    commitsIn: stats.commitsIn,
    commitsOut: stats.commitsOut,
  }
}
