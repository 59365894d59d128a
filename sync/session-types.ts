/**
 * The public shapes of a {@link SyncSession}: the channel it sends on, its
 * options, counters, events and state. Split from sync/session.ts so the
 * session's parts (handshake, inbound, outbound, anti-entropy) share them.
 */
import type { Admission } from './admission.ts'
import type { RefuseReason } from './messages.ts'
import type { AgentId } from '../crdt/agent-id.ts'
import type { NameFilter } from './names.ts'
import type { PresenceEntry } from './presence.ts'

/** Malformed frames a session tolerates before it refuses the peer (`SessionOptions.maxMalformed`). */
export const DEFAULT_MAX_MALFORMED = 16

/** Where a session sends its frames (a transport connection fits). */
export interface SyncChannel {
  /** Sends one frame; resolves when accepted (backpressure), rejects once closed. */
  send(frame: Uint8Array): Promise<void>
  /** Closes the channel; idempotent. */
  close(reason?: string): void
}

/** Options of a {@link SyncSession}. */
export interface SessionOptions {
  /** This peer's id, sent in HELLO. */
  readonly agentId: AgentId
  /**
   * This side's secret (empty by default). Protocol 2 proves it (AUTH: an
   * HMAC over both sides' fresh nonces); it travels only as a legacy bearer.
   */
  readonly token?: string | undefined
  /**
   * Protocol-1 bearer tokens: present `token` in the clear in HELLO (so a
   * protocol-1 remote can check it) and accept a protocol-1 remote's clear
   * token. Default false: a captured clear token authenticates whoever
   * replays it (true for a session limited to protocol 1 by `versions`).
   */
  readonly legacyBearer?: boolean | undefined
  /**
   * Which end of the connection this side is (attachSession takes the
   * connection's). The dialer (`outbound`, the default) proves first; the
   * other end proves only once it accepted the dialer's proof, so that a
   * stranger who connects cannot make it prove anything.
   */
  readonly direction?: 'inbound' | 'outbound' | undefined
  /**
   * Bytes both ends of the connection see alike and a relay cannot forge
   * (libp2p: both PeerIds, proved by Noise); bound into both proofs, so a
   * proof relayed from another connection fails. Both ends must give the same.
   */
  readonly channelBinding?: Uint8Array | undefined
  /** The names this side wants to receive (default: all). */
  readonly filter?: NameFilter | undefined
  /** Largest frame accepted and sent; bigger messages are chunked (default 1 MiB). */
  readonly maxFrameBytes?: number | undefined
  /** Largest reassembled message accepted (default 64 MiB). */
  readonly maxMessageBytes?: number | undefined
  /**
   * Memory the remote's partial (chunked) messages may hold here: their bytes
   * plus 128 bytes per part (default: one `maxMessageBytes` message in parts
   * of the smallest frames, about 104 MiB for 64 MiB). Over it the remote is
   * refused with `limit`.
   */
  readonly maxReassemblyBytes?: number | undefined
  /**
   * Bytes of the remote's messages waiting here to be handled (the receive
   * queue), the one being handled included (default 2 x `maxMessageBytes`,
   * 128 MiB). This side asks the remote, in its HELLO, to keep at most an
   * eighth of it in flight; a remote that sends more is refused with `limit`.
   */
  readonly maxInboxBytes?: number | undefined
  /**
   * Largest HELLO accepted (default 64 KiB). Before the remote is accepted
   * it may send only that one HELLO (and one AUTH, HELLO-OK or REFUSE, each
   * small); anything else closes the connection, counted in
   * `handshakeViolations`, and nothing else is decoded.
   */
  readonly maxHelloBytes?: number | undefined
  /**
   * Expensive requests of the remote (REQUEST, answered with our VERSIONS;
   * VERSIONS, answered with what it lacks): at most `burst` at once, then
   * `perSecond` (default 4 per second, a burst of 16). One beyond the rate
   * waits (a newer one replaces it) and is served as the bucket refills, on
   * later frames and on {@link SyncSession.tick}; a REQUEST that arrives
   * while our VERSIONS is being built is already answered by it.
   */
  readonly requestRate?: { readonly perSecond: number; readonly burst?: number | undefined } | undefined
  /** Unacknowledged commits the remote may have in flight to us (default 256). */
  readonly window?: number | undefined
  /** Queued outgoing commits beyond which the queue is replaced by a resync (default 4096). */
  readonly maxQueuedCommits?: number | undefined
  /** Malformed frames tolerated before the peer is refused with `protocol` (default {@link DEFAULT_MAX_MALFORMED}). */
  readonly maxMalformed?: number | undefined
  /** Acknowledge at least every this many commits (default 32). */
  readonly ackEvery?: number | undefined
  /**
   * Coalesce ACKs (needs {@link setTimer}): a commit that settles is
   * acknowledged up to this many ms later, with every commit that settles
   * meanwhile; at once after `ackEvery` commits, and with the next commit
   * this side sends if that comes sooner. A receiver of a steady stream of
   * small commits then sends one ACK per `ackDelayMs`, not one per commit
   * (each costs a socket write here and a read there). Nothing is
   * acknowledged before it is durable either way. Default 0: once the
   * receive queue is empty.
   */
  readonly ackDelayMs?: number | undefined
  /**
   * Runs `fn` once after `ms` of real time unless the function it returns is
   * called first (the session has no timers of its own); used by `ackDelayMs`.
   */
  readonly setTimer?: ((fn: () => void, ms: number) => () => void) | undefined
  /** {@link SyncSession.tick}: close if the handshake is not done within this (default 10 s). */
  readonly handshakeTimeoutMs?: number | undefined
  /**
   * {@link SyncSession.tick}: repeat a resync whose answer stayed silent this
   * long (nothing of it arrived or waited here to be handled), or ask for one
   * when acknowledgements stalled this long (default 5 s); each repeat waits
   * twice as long, and after 3 silent repeats the session closes.
   */
  readonly resyncTimeoutMs?: number | undefined
  /** {@link SyncSession.tick}: send VERSIONS this often (default 0: only on connect and on gaps). */
  readonly antiEntropyIntervalMs?: number | undefined
  /** Protocol versions offered (tests use it to check refusals; default this code's range). */
  readonly versions?: { readonly min: number; readonly max: number } | undefined
  /**
   * Inbound rate limit of this connection (default: none). Frames beyond the
   * rate wait (they are processed as the bucket refills, on later frames and
   * on {@link SyncSession.tick}); when more than `maxDeferredBytes` wait, the
   * remote is refused with `limit`.
   */
  readonly rateLimit?: {
    readonly bytesPerSecond: number
    /** Bytes that may arrive at once before the rate applies (default: one second's worth). */
    readonly burstBytes?: number
    /** Bytes allowed to wait (default: 4 x burst). */
    readonly maxDeferredBytes?: number
  }
  /** Time source in ms for {@link SyncSession.tick} (default `Date.now`). */
  readonly now?: (() => number) | undefined
  /**
   * The peer's admission (credentials, reads, writes: the rules every door of
   * the peer shares); default one over `host` with `filter`.
   */
  readonly admission?: Admission | undefined
  /**
   * Take presence (sync/presence.ts): announce the `presence` HELLO
   * extension and emit the entries of received PRESENCE messages as
   * `presence` events (default false: a PRESENCE is dropped as unexpected).
   */
  readonly presence?: boolean | undefined
  /**
   * Take and send provenance (sync/provenance.ts): announce the
   * `provenance` HELLO extension, log a commit under the author its
   * PROVENANCE names, and send the author of each commit to a remote that
   * announced it (default true; false speaks as a peer from before it).
   */
  readonly provenance?: boolean | undefined
  /**
   * Take and send the authors' signatures with provenance: announce the
   * `signatures` HELLO extension and send each entry's signature in the
   * PROVENANCE of a commit to a remote that announced it (default true
   * when `provenance` is on; false speaks as a peer from before
   * signatures).
   */
  readonly signatures?: boolean | undefined
  /**
   * Take and send anti-entropy answers made of records (sync/PROTOCOL.md
   * "Answers made of records"): announce the `answer-records` HELLO
   * extension, and answer a remote that announced it with the logged
   * changes it lacks, each with its provenance, where the host can tell
   * them (default true when `provenance` is on; false answers with merged
   * state only, as a peer from before it).
   */
  readonly answerRecords?: boolean | undefined
  /**
   * Reconcile by ranges (sync/reconcile.ts) with a remote that announces it
   * too: announce the `reconcile` HELLO extension and resync with RANGES and
   * WANT instead of VERSIONS (default true; false: VERSIONS always, as a
   * peer of an older version does).
   */
  readonly reconcile?: boolean | undefined
  /**
   * Take and send INDEPENDENT bundles (sync/PROTOCOL.md "Bounded answers"):
   * announce the `independent` HELLO extension, and send an answer's names
   * that never shared a unit here as INDEPENDENT to a remote that announced
   * it (default true; false: every bundle goes as a TRANSACTION and every
   * remote TRANSACTION of several names is taken as a unit, as a peer of an
   * older version does).
   */
  readonly independent?: boolean | undefined
}

/** Counters of one session. */
export interface SessionStats {
  framesIn: number
  framesOut: number
  bytesIn: number
  bytesOut: number
  /** Frames that did not decode, broke a limit, or carried undecodable deltas. */
  malformed: number
  /** Messages of unknown type (ignored). */
  unknown: number
  /** Valid messages that came at the wrong time (dropped). */
  unexpected: number
  commitsIn: number
  commitsOut: number
  /** Commits received twice (ignored). */
  duplicates: number
  /** Missing sequence numbers detected (each triggers a resync). */
  gaps: number
  /** Remote commits this side refused (access, filter, type, bad bytes). */
  refusedWrites: number
  /** Local commits the remote refused. */
  rejectedByRemote: number
  chunksIn: number
  chunksOut: number
  /** VERSIONS sent. */
  versionsSent: number
  /** Reconciliations this side started (RANGES, instead of a VERSIONS). */
  reconciliations: number
  /** Resyncs repeated because their answer stayed silent for the resync timeout (doubled at each repeat). */
  resyncRetries: number
  /** Keepalives sent: a repeat of our last ACK while busy with the remote's messages or taking a chunked one. */
  keepalivesOut: number
  /** Times the outgoing queue overflowed and was replaced by a resync. */
  overflows: number
  /** Frames that waited for the inbound rate limit. */
  deferred: number
  /** Connections closed before the remote HELLO was accepted: a frame other than one bounded HELLO, or the handshake timeout. */
  handshakeViolations: number
  /** REQUESTs and VERSIONS of the remote that waited for the request rate (a newer one replaces a waiting one). */
  deferredRequests: number
  /** REQUESTs answered by a VERSIONS of ours that was already being built. */
  coalescedRequests: number
  /** PRESENCE messages received and taken, sent, and dropped over the rate limit. */
  presenceIn: number
  presenceOut: number
  presenceDropped: number
  /** Commits of logged changes sent in anti-entropy answers (with their provenance). */
  answerRecords: number
  /** Names sent as merged state in anti-entropy answers (a fallback, or a residual after records). */
  answerMerged: number
}

/** Events of a {@link SyncSession}. */
export interface SessionEvents extends Record<string, unknown> {
  /** Handshake done; data may flow. */
  open: { readonly agentId: AgentId; readonly version: number }
  /** The first answer to our VERSIONS is applied: we hold what the remote held then. */
  synced: { readonly agentId: AgentId }
  /** The connection was refused, by this side (`local`) or the remote. */
  refused: { readonly by: 'local' | 'remote'; readonly reason: RefuseReason; readonly message: string }
  /** The remote refused one of our commits. */
  rejected: { readonly seq: number; readonly name: string; readonly code: string; readonly message: string }
  /** We refused one of the remote's commits (never applied). */
  'refused-write': { readonly name: string; readonly code: string; readonly message: string }
  /** The remote acknowledged our commits up to `seq`. */
  ack: { readonly seq: number }
  /** The remote sent presence entries (only with `presence`; within the rate limit). */
  presence: { readonly entries: readonly PresenceEntry[] }
  /** The session ended. */
  close: { readonly reason?: string }
}

/** State of a session. */
export type SessionState = 'handshake' | 'open' | 'closed'

/** Fresh counters, all zero. */
export function newSessionStats(): SessionStats {
  return {
    framesIn: 0,
    framesOut: 0,
    bytesIn: 0,
    bytesOut: 0,
    malformed: 0,
    unknown: 0,
    unexpected: 0,
    commitsIn: 0,
    commitsOut: 0,
    duplicates: 0,
    gaps: 0,
    refusedWrites: 0,
    rejectedByRemote: 0,
    chunksIn: 0,
    chunksOut: 0,
    versionsSent: 0,
    reconciliations: 0,
    resyncRetries: 0,
    keepalivesOut: 0,
    overflows: 0,
    deferred: 0,
    handshakeViolations: 0,
    deferredRequests: 0,
    coalescedRequests: 0,
    presenceIn: 0,
    presenceOut: 0,
    presenceDropped: 0,
    answerRecords: 0,
    answerMerged: 0,
  }
}
