/**
 * One sync session: the protocol state machine for one connection, between
 * the local {@link SyncHost} and a remote peer. Transport-agnostic: the
 * caller feeds received frames to {@link SyncSession.receive} and gives a
 * {@link SyncChannel} to send frames on. No timers inside: the caller may
 * drive {@link SyncSession.tick} for timeouts and periodic anti-entropy.
 *
 * Lifecycle (see sync/PROTOCOL.md): both sides send HELLO; each checks the
 * other's versions and credentials (protocol 2: AUTH proofs, the dialer
 * first) and answers HELLO-OK or REFUSE; once a
 * side has accepted the remote HELLO and received HELLO-OK, the session is
 * open and sends VERSIONS. Each side answers a VERSIONS with the commits the
 * other lacks then DONE, and from then on forwards local commits live.
 * Received commits are applied in order, all or none, and acknowledged once
 * persisted.
 *
 * This class wires the parts together: sync/handshake.ts (versions),
 * sync/session-open.ts (the handshake's I/O until the session opens, what
 * the remote's HELLO agreed to, and the remote's VERSIONS, REQUEST and WANT
 * answered at the request gate's rate), sync/remote-acks.ts (the remote's
 * ACK and REJECT of what this side sent),
 * sync/admission.ts (credentials, what the remote may read and write: the
 * rules every door of a peer shares), sync/inbound.ts (decoding, the ledger
 * of remote sequence numbers and ACKs), sync/rate-gate.ts (inbound rate
 * limit), sync/intake.ts (what may come before the handshake, reassembly,
 * the receive queue and its budgets), sync/request-gate.ts (the rate of
 * expensive requests), sync/outbound.ts (queues, windows, pump, chunked
 * sends), sync/anti-entropy.ts (VERSIONS, answers in bundles, DONE),
 * sync/inbound-commits.ts (the remote's commits admitted, settled and
 * acknowledged), sync/liveness.ts (what tick drives once open: resync
 * repeats, keepalives, stalled acknowledgements, periodic anti-entropy) and
 * sync/extension-use.ts (the optional extensions both sides take).
 */
import { Emitter, type Unsubscribe } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import { Admission } from './admission.ts'
import { AntiEntropy } from './anti-entropy.ts'
import { MIN_FRAME_BYTES } from './chunking.ts'
import { ExtensionUse } from './extension-use.ts'
import { takesIndependent } from './extensions.ts'
import type { Handshake } from './handshake.ts'
import type { LocalCommit, SyncHost } from './host.ts'
import { InboundLedger } from './inbound.ts'
import { InboundCommits } from './inbound-commits.ts'
import { Intake, intakeLimits } from './intake.ts'
import { Liveness } from './liveness.ts'
import { encodeMessage, type DecodedMessage, type Message, type RefuseReason } from './messages.ts'
import type { AgentId } from '../crdt/agent-id.ts'
import { ALL_NAMES, matchesFilter, type NameFilter } from './names.ts'
import { DEFAULT_MAX_FRAME, Outbox } from './outbound.ts'
import { PresenceGate, presenceBatches, takesPresence, type PresenceEntry } from './presence.ts'
import { RemoteAcks } from './remote-acks.ts'
import { SessionOpening } from './session-open.ts'
import {
  DEFAULT_MAX_MALFORMED,
  newSessionStats,
  type SessionEvents,
  type SessionOptions,
  type SessionState,
  type SessionStats,
  type SyncChannel,
} from './session-types.ts'

export type { SyncChannel, SessionOptions, SessionStats, SessionEvents, SessionState } from './session-types.ts'
export { ANSWER_BUNDLE_BYTES } from './anti-entropy.ts'

/** The protocol state machine of one connection. See the module comment. */
export class SyncSession {
  /** Events of the session (see {@link SessionEvents}). */
  readonly events = new Emitter<SessionEvents>()
  private readonly stat: SessionStats = newSessionStats()

  private readonly filter: NameFilter
  private readonly maxFrameBytes: number
  private readonly window: number
  private readonly maxMalformed: number
  private readonly now: () => number
  /** The handshake, what the remote's HELLO agreed to, and the requests it serves once open (sync/session-open.ts). */
  private readonly opening: SessionOpening
  private readonly handshake: Handshake
  /** The optional extensions this side and the remote take. */
  private readonly extensions: ExtensionUse
  /** The rules of this peer: credentials, reads, writes (every door shares them). */
  private readonly admission: Admission

  private stateValue: SessionState = 'handshake'
  private closing = false
  private readonly startedAt: number
  private unsubscribe: Unsubscribe | undefined

  // inbound
  private readonly intake: Intake
  private readonly ledger: InboundLedger
  private readonly inbound: InboundCommits

  private readonly presenceGate = new PresenceGate()

  // outbound
  private readonly outbox: Outbox
  private readonly antiEntropy: AntiEntropy
  private readonly liveness: Liveness
  /** The remote's ACK and REJECT of what this side sent (sync/remote-acks.ts). */
  private readonly acks: RemoteAcks

  constructor(
    private readonly host: SyncHost,
    private readonly channel: SyncChannel,
    private readonly options: SessionOptions,
  ) {
    this.filter = options.filter ?? ALL_NAMES
    this.admission = options.admission ?? new Admission(host, { filter: this.filter })
    this.maxFrameBytes = Math.max(MIN_FRAME_BYTES, options.maxFrameBytes ?? DEFAULT_MAX_FRAME)
    this.window = Math.max(1, options.window ?? 256)
    this.maxMalformed = options.maxMalformed ?? DEFAULT_MAX_MALFORMED
    this.ledger = new InboundLedger(Math.max(1, options.ackEvery ?? 32))
    this.extensions = new ExtensionUse(options)
    this.now = options.now ?? Date.now
    this.startedAt = this.now()
    this.intake = new Intake(
      intakeLimits(options, this.maxFrameBytes, this.window),
      {
        stats: this.stat,
        ledger: this.ledger,
        now: this.now,
        remoteAccepted: () => this.handshake.remote !== undefined,
        active: () => this.stateValue !== 'closed' && !this.closing,
        refuse: (reason, message) => this.refuse(reason, message),
        violation: (refusal) => {
          // After the handshake step under way: a replayed capture is refused for its credentials, if they fail.
          this.opening.violation()
          this.intake.enqueue(async () => this.refuse(refusal.reason, refusal.message))
        },
        malformed: (why) => this.malformed(why),
        handle: (message) => this.handle(message),
        handleGroup: (messages) => this.handleGroup(messages),
        handleNow: (message) => void this.handle(message),
        handleAhead: (message) => this.acks.ahead(message),
        fail: (reason) => this.close(reason),
        arrived: (kind) => this.liveness.arrived(kind),
      },
      this.startedAt,
    )
    this.outbox = new Outbox(
      {
        channel,
        stats: this.stat,
        agentId: options.agentId,
        maxFrameBytes: this.maxFrameBytes,
        maxQueued: Math.max(1, options.maxQueuedCommits ?? 4096),
        remote: () => this.handshake.remote,
        remoteWindowBytes: () => this.opening.remoteWindowBytes,
        remoteTakesIndependent: () => this.extensions.independent && this.handshake.remote !== undefined && takesIndependent(this.handshake.remote),
        active: () => this.stateValue !== 'closed' && !this.closing,
        fail: (reason) => this.close(reason),
      },
      this.startedAt,
    )
    this.antiEntropy = new AntiEntropy({
      host,
      filter: this.filter,
      outbox: this.outbox,
      stats: this.stat,
      now: this.now,
      mayRead: (name) => this.admission.mayRead(this.handshake.remote?.agentId, name),
      fail: (reason) => this.close(reason),
      reconciler: () => this.opening.reconciler,
    })
    this.opening = new SessionOpening({
      host,
      filter: this.filter,
      options,
      admission: this.admission,
      extensions: this.extensions,
      stats: this.stat,
      antiEntropy: this.antiEntropy,
      intake: this.intake,
      now: this.now,
      startedAt: this.startedAt,
      origin: this,
      open: () => this.stateValue === 'open' && !this.closing,
      active: () => this.stateValue !== 'closed' && !this.closing,
      closed: () => this.stateValue === 'closed',
      sendControl: (message) => this.sendControl(message),
      refuse: (reason, message) => this.refuse(reason, message),
      malformed: (why) => this.malformed(why),
      close: (reason) => this.close(reason),
      maybeOpen: () => this.maybeOpen(),
    })
    this.handshake = this.opening.handshake
    this.inbound = new InboundCommits({
      stats: this.stat,
      ledger: this.ledger,
      admission: this.admission,
      antiEntropy: this.antiEntropy,
      extensions: this.extensions,
      events: this.events,
      options,
      now: this.now,
      handshake: this.handshake,
      origin: this,
      closed: () => this.stateValue === 'closed',
      sendControl: (message) => this.sendControl(message),
      malformed: (why) => this.malformed(why),
      close: (reason) => this.close(reason),
    })
    this.liveness = new Liveness({
      stats: this.stat,
      ledger: this.ledger,
      outbox: this.outbox,
      antiEntropy: this.antiEntropy,
      options,
      now: this.now,
      sendControl: (message) => this.sendControl(message),
      close: (reason) => this.close(reason),
    })
    this.acks = new RemoteAcks({
      stats: this.stat,
      events: this.events,
      outbox: this.outbox,
      antiEntropy: this.antiEntropy,
      liveness: this.liveness,
      now: this.now,
      open: () => this.stateValue === 'open' && !this.closing,
    })
  }

  /** Current state. */
  get state(): SessionState {
    return this.stateValue
  }

  /** The remote peer's id, once its HELLO was accepted. */
  get remoteAgentId(): AgentId | undefined {
    return this.handshake.remote?.agentId
  }

  /** The names the remote asked for, once its HELLO was accepted. */
  get remoteFilter(): NameFilter | undefined {
    return this.handshake.remote?.filter
  }

  /** A copy of the counters. */
  get stats(): Readonly<SessionStats> {
    return { ...this.stat }
  }

  /** Highest of our commits the remote acknowledged (persisted or refused). */
  get ackedSeq(): number {
    return this.outbox.ackedSeq
  }

  /** Highest sequence number given to one of our commits on this session. */
  get sentSeq(): number {
    return this.outbox.sentSeq
  }

  /** Our commits the remote has not acknowledged yet (sent or queued), and their estimated bytes. */
  get lag(): { readonly commits: number; readonly bytes: number } {
    return this.outbox.lag
  }

  /** When (the session's clock, ms) the remote last acknowledged a new commit of ours; undefined: never. */
  get lastAckAt(): number | undefined {
    return this.outbox.lastAckAt
  }

  /** Sends HELLO. Call once, right after creating the session. */
  start(): void {
    this.sendControl(this.handshake.hello(this.filter, this.maxFrameBytes, this.window, this.extensions.hello(this.intake.windowBytes)))
  }

  /**
   * Sends presence entries to the remote if the session is open and the
   * remote takes presence: those about no name or a name the remote may
   * read (the admission's one test). Returns how many were sent.
   */
  sendPresence(entries: readonly PresenceEntry[]): number {
    const remote = this.handshake.remote
    if (this.stateValue !== 'open' || this.closing || !remote || !takesPresence(remote.extensions)) return 0
    let sent = 0
    for (const batch of presenceBatches(entries, (name) => this.admission.mayRead(remote.agentId, name))) {
      this.stat.presenceOut++
      sent += batch.length
      this.sendControl({ type: 'presence', entries: batch })
    }
    return sent
  }

  /** Handles one frame from the remote. Never throws. */
  receive(frame: Uint8Array): void {
    if (this.stateValue === 'closed' || this.closing) return
    this.stat.framesIn++
    this.stat.bytesIn += frame.length
    this.intake.receive(frame)
    this.opening.serveWaiting()
  }

  /** Bytes of the remote's messages queued here, and memory held by its partial messages. */
  get inboundBytes(): { readonly queued: number; readonly reassembly: number } {
    return { queued: this.intake.queuedBytes, reassembly: this.intake.reassemblyBytes }
  }

  /**
   * Drives time-based behaviour: handshake timeout, repeating a resync that
   * got no answer, asking for a resync when acknowledgements stall, and the
   * periodic anti-entropy. Call it now and then (or never, on a reliable
   * transport without a periodic resync).
   */
  tick(now: number = this.now()): void {
    if (this.stateValue === 'closed' || this.closing) return
    this.intake.drain(now)
    const handshakeTimeout = this.options.handshakeTimeoutMs ?? 10_000
    if (this.stateValue === 'handshake') {
      if (now - this.startedAt >= handshakeTimeout) {
        if (!this.handshake.remote) this.stat.handshakeViolations++
        this.close('handshake timeout')
      }
      return
    }
    this.opening.serveWaiting(now)
    // The remote's messages still being handled here (an answer being applied, a DONE behind it): not silence.
    this.liveness.tick(now, this.intake.queuedBytes > 0 || this.inbound.unsettled)
  }

  /**
   * Resolves when the remote has acknowledged (persisted) every commit this
   * session was given before the call, including the initial anti-entropy
   * answer; rejects with `CONCORD_CLOSED` if the session ends first, or
   * `CONCORD_ABORTED` on `signal`.
   */
  whenAcked(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.stateValue === 'closed') return Promise.reject(new ConcordError(ErrorCodes.CLOSED, 'session closed'))
    return this.outbox.whenAcked(options.signal)
  }

  /**
   * Anti-entropy now, pulling: sends our VERSIONS; the remote answers with
   * what we lack, then DONE. For a peer whose live deltas travel another way
   * (gossipsub) and that saw a gap in them. No-op unless open.
   */
  pull(): void {
    if (this.stateValue !== 'open' || this.closing) return
    this.antiEntropy.sendVersions()
  }

  /**
   * Anti-entropy now, pushing: asks the remote for its VERSIONS (REQUEST) and
   * holds queued live commits until it answers (the answer supersedes them).
   * A {@link whenAcked} called after this resolves once the remote
   * acknowledged that answer, so it also covers commits this session never
   * forwarded live (a peer whose live deltas travel another way, such as
   * gossipsub). No-op unless open.
   */
  push(): void {
    if (this.stateValue !== 'open' || this.closing) return
    this.outbox.live = false
    this.sendControl({ type: 'request' })
  }

  /** Refuses the connection with `reason` (sends REFUSE, then closes). */
  refuse(reason: RefuseReason, message: string): void {
    if (this.stateValue === 'closed' || this.closing) return
    this.events.emit('refused', { by: 'local', reason, message })
    const frame = encodeMessage({ type: 'refuse', reason, message, minVersion: this.handshake.minVersion, maxVersion: this.handshake.maxVersion })
    this.closing = true
    this.stat.framesOut++
    this.stat.bytesOut += frame.length
    this.channel.send(frame).then(
      () => this.close(`refused: ${reason}`),
      () => this.close(`refused: ${reason}`),
    )
  }

  /** Ends the session and closes the channel; idempotent. */
  close(reason?: string): void {
    this.ended(reason)
    try {
      this.channel.close(reason)
    } catch {
      // a channel that throws on close is closed anyway
    }
  }

  /** Tells the session its channel closed (the transport's `close` event). */
  channelClosed(reason?: string): void {
    this.ended(reason)
  }

  private ended(reason?: string): void {
    if (this.stateValue === 'closed') return
    this.stateValue = 'closed'
    this.closing = true
    this.inbound.cancelDeferredAck()
    this.unsubscribe?.()
    this.unsubscribe = undefined
    this.opening.reconciler?.close()
    this.intake.clear()
    this.outbox.end(new ConcordError(ErrorCodes.CLOSED, `session closed${reason ? `: ${reason}` : ''}`))
    this.events.emit('close', { reason })
  }

  private malformed(why: string): void {
    this.stat.malformed++
    if (this.stat.malformed > this.maxMalformed) {
      this.refuse('protocol', `too many malformed frames (last: ${why})`)
    }
  }

  // ---- inbound -----------------------------------------------------------

  /**
   * DELTAs (each after its PROVENANCE, if any) that queued up behind the
   * message handled before them: handed to the inbound side together once
   * the session is open (one unit when the host can), else one by one.
   */
  private async handleGroup(messages: readonly DecodedMessage[]): Promise<void | { readonly settled: Promise<void> }> {
    if (this.stateValue !== 'open') {
      const settles: Promise<void>[] = []
      for (const message of messages) {
        const handled = await this.handle(message)
        if (handled) settles.push(handled.settled)
      }
      return settles.length > 0 ? { settled: Promise.all(settles).then(() => undefined) } : undefined
    }
    return this.inbound.onGroup(messages)
  }

  private async handle(message: DecodedMessage): Promise<void | { readonly settled: Promise<void> }> {
    if (message.type === 'unknown') {
      this.stat.unknown++
      return
    }
    if (message.type === 'refuse') {
      const explained = this.handshake.explain(message)
      this.events.emit('refused', { by: 'remote', reason: message.reason, message: explained })
      this.close(`refused by remote: ${message.reason}: ${explained}`)
      return
    }
    if (this.stateValue === 'handshake') {
      if (message.type === 'hello' || message.type === 'auth') await this.opening.receive(message)
      else if (message.type === 'hello-ok') this.opening.helloOk()
      else this.stat.unexpected++ // data before the handshake: dropped, never applied
      return
    }
    switch (message.type) {
      case 'hello':
      case 'hello-ok':
      case 'auth':
        this.stat.unexpected++
        return
      case 'versions':
        if (this.opening.admitVersions(message.entries)) await this.opening.answer(message.entries)
        return
      case 'delta':
        return this.inbound.onCommit(message.seq, [message.entry])
      case 'transaction':
        // INDEPENDENT counts only as this side announced it (else it is a TRANSACTION like any).
        return this.inbound.onCommit(message.seq, message.entries, message.independent === true && this.extensions.independent)
      case 'ack':
        this.acks.onAck(message.seq)
        return
      case 'done':
        // What it covers is acknowledged only once the commits before it are durable.
        await this.inbound.allSettled()
        if (this.stateValue !== 'closed' && this.inbound.onDone(message.seq)) this.events.emit('synced', { agentId: this.handshake.remote!.agentId })
        return
      case 'request':
        this.opening.onRequest()
        return
      case 'reject':
        this.acks.onReject(message)
        return
      case 'chunk':
        this.stat.unexpected++
        return
      case 'presence':
        this.onPresence(message.entries)
        return
      case 'provenance':
        if (!this.extensions.provenance) this.stat.unexpected++
        else this.inbound.provenance(message)
        return
      case 'ranges':
        if (this.opening.reconciler) await this.opening.reconciler.onRanges(message)
        else this.stat.unexpected++
        return
      case 'want':
        if (this.opening.reconciler) await this.opening.reconciler.onWant(message)
        else this.stat.unexpected++
        return
    }
  }

  /** Presence from the remote: an event within the rate limit, if this side takes presence. */
  private onPresence(entries: readonly PresenceEntry[]): void {
    if (!this.options.presence) this.stat.unexpected++
    else if (!this.presenceGate.take(this.now())) this.stat.presenceDropped++
    else {
      this.stat.presenceIn++
      this.events.emit('presence', { entries })
    }
  }

  private maybeOpen(): void {
    if (!this.opening.ready || this.stateValue !== 'handshake') return
    this.stateValue = 'open'
    this.outbox.lastAckProgressAt = this.now()
    this.unsubscribe = this.host.subscribe((commit) => this.onLocalCommit(commit))
    this.events.emit('open', { agentId: this.handshake.remote!.agentId, version: this.handshake.version })
    this.antiEntropy.sendVersions({ opening: true })
  }

  // ---- outbound ----------------------------------------------------------

  private sendControl(message: Message): void {
    if (this.stateValue === 'closed') return
    this.outbox.sendControl(message)
  }

  private onLocalCommit(commit: LocalCommit): void {
    if (this.stateValue !== 'open' || this.closing || !this.outbox.live || commit.origin === this) return
    const remote = this.handshake.remote!
    const entries = this.admission.readable(
      remote.agentId,
      commit.entries.filter((entry) => matchesFilter(remote.filter, entry.name)),
    )
    if (entries.length === 0) return
    // The author goes along when it is not this peer's own plain change (the remote assumes that), or signed it.
    const provenance = this.extensions.outgoing(remote, commit.provenance, entries)
    // A coalesced ACK goes along (in the same socket write, on a transport that corks a turn's frames).
    this.inbound.flushDeferredAck()
    if (!this.outbox.queueCommit(entries, provenance)) {
      // Too far behind: the queue was dropped; resync from the remote's versions instead.
      this.stat.overflows++
      this.sendControl({ type: 'request' })
    }
  }
}
