/**
 * The sessions of a peer (every door's: accepted, dialed, libp2p, attached
 * by hand): attaching one over a connection with the peer's tuning,
 * credentials and admission, relaying its events as the peer's, and what
 * is kept of each (when it started, opened and synced; the counters of
 * those that ended) for `peer.stats()` and `peer.status()`.
 */
import type { Emitter } from '../crdt/emitter.ts'
import { attachSession, agentId as toAgentId, type Admission, type SessionStats, type SyncHost, type SyncSession } from '../sync/index.ts'
import type { Connection } from '../transports/transport.ts'
import type { ResolvedPeerSetup, SyncTuning } from './options.ts'
import type { PeerEvents } from './peer-events.ts'
import type { Presence } from './presence.ts'
import { addStats, emptyStats } from './session-stats.ts'
import { sessionStatus, type PeerSessionStatus, type SessionTimes } from './status.ts'

/**
 * ACKs coalesced over this many ms (SessionOptions.ackDelayMs) when the peer
 * runs on real timers: a client receiving a steady stream of small commits
 * sends one ACK per 20 ms instead of one per commit (issue 19: the ACKs were
 * a socket write per commit at the receiver and a read at the hub).
 */
const ACK_DELAY_MS = 20

/** `setTimeout` that keeps no process alive (a browser's timer handle is a number); returns its cancel. */
function runLater(fn: () => void, ms: number): () => void {
  const handle = setTimeout(fn, ms)
  ;(handle as { unref?: () => void }).unref?.()
  return () => clearTimeout(handle)
}

/** How the peer attaches a session: credentials, host, tuning and channel binding (libp2p). */
export interface AttachOptions {
  readonly token?: string
  /** The session's host; its `authenticate` is the session's credential check (accepted, dialed, identity-bound). */
  readonly host: SyncHost
  readonly sync?: Partial<SyncTuning>
  readonly channelBinding?: Uint8Array
}

/** What {@link PeerSessions} needs of its peer. */
export interface PeerSessionsContext {
  readonly agentId: string
  readonly options: ResolvedPeerSetup
  /** The peer's events: a session's are relayed there. */
  readonly events: Emitter<PeerEvents>
  readonly presence: Presence
  /** The peer's one admission (each session gets it with its host's credential check). */
  readonly admission: Admission
  /** Whether the peer runs on real timers (`tickMs` > 0), not a simulation's virtual time. */
  readonly realTimers: boolean
}

/** A peer's sessions, attached and relayed (see the module comment). */
export class PeerSessions {
  /** The sessions not yet closed, in the order they were attached. */
  readonly sessions = new Set<SyncSession>()
  /** When each session started, opened and synced (for {@link statuses}). */
  private readonly sessionTimes = new WeakMap<SyncSession, SessionTimes>()
  private readonly finishedTotals: SessionStats = emptyStats()

  constructor(private readonly context: PeerSessionsContext) {}

  /** Attaches a session over `connection` with a given host and session tuning; it is the peer's until it closes. */
  attach(connection: Connection, options: AttachOptions): SyncSession {
    const peer = this.context
    const session = attachSession(connection, options.host, {
      // Timers of real time only: a simulation (tickMs 0) drives time itself.
      ...(peer.realTimers ? { ackDelayMs: ACK_DELAY_MS, setTimer: runLater } : {}),
      ...peer.options.sync,
      ...options.sync,
      agentId: toAgentId(peer.agentId),
      token: options.token ?? peer.options.auth?.token,
      legacyBearer: peer.options.auth?.legacyBearer ?? false,
      channelBinding: options.channelBinding,
      filter: peer.options.names,
      maxFrameBytes: peer.options.maxFrameBytes,
      presence: peer.options.sync?.presence ?? true,
      // The peer's one admission, with the credential check of this session's host.
      admission: peer.admission.withCredentials((remote, presented) => options.host.authenticate(remote, presented)),
    })
    this.sessions.add(session)
    const times: SessionTimes = { startedAt: this.wallClock() }
    this.sessionTimes.set(session, times)
    session.events.on('open', ({ agentId }) => {
      times.openedAt = this.wallClock()
      peer.presence.sessionOpened(session)
      peer.events.emit('peer-connected', { agentId })
    })
    session.events.on('presence', ({ entries }) => peer.presence.receive(session, entries))
    session.events.on('synced', ({ agentId }) => {
      times.syncedAt ??= this.wallClock()
      peer.events.emit('peer-synced', { agentId })
    })
    session.events.on('refused', (event) => peer.events.emit('refused', event))
    session.events.on('refused-write', ({ name, code, message }) =>
      peer.events.emit('write-refused', { by: 'local', agentId: session.remoteAgentId, name, code, message }),
    )
    session.events.on('rejected', ({ name, code, message }) =>
      peer.events.emit('write-refused', { by: 'remote', agentId: session.remoteAgentId, name, code, message }),
    )
    session.events.once('close', ({ reason }) => {
      this.sessions.delete(session)
      addStats(this.finishedTotals, session.stats)
      peer.events.emit('peer-disconnected', { agentId: session.remoteAgentId, reason })
    })
    return session
  }

  /** Agent ids of the sessions that completed their handshake. */
  connectedPeers(): string[] {
    return [...this.sessions]
      .filter((s) => s.state === 'open')
      .map((s) => s.remoteAgentId!)
      .filter(Boolean)
  }

  /** The counters summed over every session, ended or not. */
  totals(): SessionStats {
    const totals = { ...this.finishedTotals }
    for (const session of this.sessions) addStats(totals, session.stats)
    return totals
  }

  /** The status of every session at `now` (see peer/status.ts). */
  statuses(now: number): PeerSessionStatus[] {
    return [...this.sessions].map((session) => sessionStatus(session, this.sessionTimes.get(session), now))
  }

  /** The peer's wall clock, ms. */
  wallClock(): number {
    return (this.context.options.now ?? Date.now)()
  }
}
