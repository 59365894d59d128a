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
 * sync/admission.ts (credentials, what the remote may read and write: the
 * rules every door of a peer shares), sync/inbound.ts (decoding, the ledger
 * of remote sequence numbers and ACKs), sync/rate-gate.ts (inbound rate
 * limit), sync/intake.ts (what may come before the handshake, reassembly,
 * the receive queue and its budgets), sync/request-gate.ts (the rate of
 * expensive requests), sync/outbound.ts (queues, windows, pump, chunked
 * sends), and sync/anti-entropy.ts (VERSIONS, answers in bundles, DONE).
 */
import { Emitter, type Unsubscribe } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import { Admission } from './admission.ts'
import { AntiEntropy, MAX_RESYNC_RETRIES } from './anti-entropy.ts'
import { MIN_FRAME_BYTES } from './chunking.ts'
import { newNonce } from './credentials.ts'
import { independentExtension, reconcileExtension, takesIndependent, takesReconcile, windowBytesExtension, windowBytesOf } from './extensions.ts'
import { answerRecordsExtension, provenanceExtension, signaturesExtension, takesAnswerRecords, takesProvenance, takesSignatures } from './provenance.ts'
import { Handshake, PROOF_VERSION, type HandshakeIo } from './handshake.ts'
import type { HostedName, LocalCommit, SyncHost } from './host.ts'
import { InboundLedger } from './inbound.ts'
import { Intake, intakeLimits } from './intake.ts'
import {
  MIN_PROTOCOL_VERSION,
  PROTOCOL_VERSION,
  encodeMessage,
  type DecodedMessage,
  type DeltaEntry,
  type Message,
  type ProvenanceMessage,
  type RefuseReason,
  type VersionEntry,
} from './messages.ts'
import type { AgentId } from '../crdt/agent-id.ts'
import { ALL_NAMES, matchesFilter, sameFilter, type NameFilter } from './names.ts'
import { DEFAULT_MAX_FRAME, Outbox } from './outbound.ts'
import { DEFAULT_REQUEST_RATE, RequestGate, type RequestServer } from './request-gate.ts'
import { PresenceGate, presenceBatches, presenceExtension, takesPresence, type PresenceEntry } from './presence.ts'
import { Reconciler } from './reconcile-session.ts'
import { newSessionStats, type SessionEvents, type SessionOptions, type SessionState, type SessionStats, type SyncChannel } from './session-types.ts'

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
  private readonly handshake: Handshake
  /** The remote's byte window, once its HELLO was accepted. */
  private remoteWindowBytes: number | undefined
  /** The PROVENANCE of the remote's next commit, until it comes. */
  private pendingProvenance: ProvenanceMessage | undefined
  /** The rules of this peer: credentials, reads, writes (every door shares them). */
  private readonly admission: Admission

  private stateValue: SessionState = 'handshake'
  private closing = false
  /** The remote sent what may not come before the handshake: it is refused, never opened. */
  private violated = false
  private readonly startedAt: number
  private unsubscribe: Unsubscribe | undefined

  // inbound
  private readonly intake: Intake
  private readonly ledger: InboundLedger
  private readonly requests: RequestGate

  private readonly presenceGate = new PresenceGate()

  // outbound
  private readonly outbox: Outbox
  private readonly antiEntropy: AntiEntropy
  /** Range-based reconciliation, once both HELLOs announced it. */
  private reconciler: Reconciler | undefined

  constructor(
    private readonly host: SyncHost,
    private readonly channel: SyncChannel,
    private readonly options: SessionOptions,
  ) {
    this.filter = options.filter ?? ALL_NAMES
    this.admission = options.admission ?? new Admission(host, { filter: this.filter })
    this.maxFrameBytes = Math.max(MIN_FRAME_BYTES, options.maxFrameBytes ?? DEFAULT_MAX_FRAME)
    this.window = Math.max(1, options.window ?? 256)
    this.maxMalformed = options.maxMalformed ?? 16
    this.ledger = new InboundLedger(Math.max(1, options.ackEvery ?? 32))
    const maxVersion = options.versions?.max ?? PROTOCOL_VERSION
    this.handshake = new Handshake({
      minVersion: options.versions?.min ?? MIN_PROTOCOL_VERSION,
      maxVersion,
      agentId: options.agentId,
      token: options.token ?? '',
      legacyBearer: options.legacyBearer ?? maxVersion < PROOF_VERSION,
      provesFirst: options.direction !== 'inbound',
      binding: options.channelBinding ?? new Uint8Array(0),
      nonce: newNonce(),
    })
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
          this.violated = true
          this.intake.enqueue(async () => this.refuse(refusal.reason, refusal.message))
        },
        malformed: (why) => this.malformed(why),
        handle: (message) => this.handle(message),
        handleNow: (message) => void this.handle(message),
        handleAhead: (message) => this.handleAhead(message),
        fail: (reason) => this.close(reason),
        arrived: (kind) => this.arrived(kind),
      },
      this.startedAt,
    )
    this.requests = new RequestGate(options.requestRate ?? DEFAULT_REQUEST_RATE, this.startedAt)
    this.outbox = new Outbox(
      {
        channel,
        stats: this.stat,
        agentId: options.agentId,
        maxFrameBytes: this.maxFrameBytes,
        maxQueued: Math.max(1, options.maxQueuedCommits ?? 4096),
        remote: () => this.handshake.remote,
        remoteWindowBytes: () => this.remoteWindowBytes,
        remoteTakesIndependent: () => this.takesIndependent && this.handshake.remote !== undefined && takesIndependent(this.handshake.remote),
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
      reconciler: () => this.reconciler,
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
    this.sendControl(
      this.handshake.hello(this.filter, this.maxFrameBytes, this.window, [
        windowBytesExtension(this.intake.windowBytes),
        ...(this.options.presence ? [presenceExtension()] : []),
        ...(this.takesProvenance ? [provenanceExtension()] : []),
        ...(this.takesSignatures ? [signaturesExtension()] : []),
        ...(this.takesAnswerRecords ? [answerRecordsExtension()] : []),
        ...(this.options.reconcile !== false ? [reconcileExtension()] : []),
        ...(this.takesIndependent ? [independentExtension()] : []),
      ]),
    )
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
    if (this.requests.waiting) this.serveWaitingRequests(this.now())
  }

  /** Serves the expensive requests that waited for the rate (once open). */
  private serveWaitingRequests(now: number): void {
    if (this.stateValue === 'open' && !this.closing) this.requests.serve(now, this.requestServer)
  }

  /** How the request gate answers: our VERSIONS, or an answer queued behind the messages being handled. */
  private readonly requestServer: RequestServer = {
    stats: this.stat,
    building: () => this.antiEntropy.building,
    sendVersions: () => this.antiEntropy.sendVersions(),
    answer: (entries) => this.intake.enqueue(() => this.onVersions(entries)),
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
    if (this.requests.waiting) this.serveWaitingRequests(now)
    const resyncTimeout = this.options.resyncTimeoutMs ?? 5_000
    // The remote's messages still being handled here (an answer being applied, a DONE behind it): not silence.
    const busy = this.intake.queuedBytes > 0 || this.settling.size > 0
    if (busy) this.antiEntropy.progress(now)
    // ... and the remote is told so (a repeat of our last ACK, which a remote ignores as stale but takes as a sign of progress).
    if ((busy || this.chunksSinceKeepalive) && now - this.keepaliveAt >= resyncTimeout / 2) {
      this.keepaliveAt = now
      this.chunksSinceKeepalive = false
      this.stat.keepalivesOut++
      this.sendControl({ type: 'ack', seq: this.ledger.lastAck })
    }
    if (this.antiEntropy.resyncOverdue(now, resyncTimeout)) {
      if (this.antiEntropy.retries >= MAX_RESYNC_RETRIES) {
        this.close(`resync timeout: no answer after ${MAX_RESYNC_RETRIES + 1} tries`)
        return
      }
      this.stat.resyncRetries++
      this.antiEntropy.sendVersions({ retry: true })
    }
    // Stalled acknowledgements ask for a resync, again after twice the wait each time nothing moved.
    if (this.outbox.stalled && now - this.outbox.lastAckProgressAt >= resyncTimeout * 2 ** Math.min(this.stalledRequests, MAX_RESYNC_RETRIES)) {
      this.outbox.lastAckProgressAt = now
      this.stalledRequests++
      this.sendControl({ type: 'request' })
    }
    const interval = this.options.antiEntropyIntervalMs ?? 0
    if (this.antiEntropy.periodicDue(now, interval)) this.antiEntropy.sendVersions()
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
    this.ackDeferred?.cancel()
    this.ackDeferred = undefined
    this.unsubscribe?.()
    this.unsubscribe = undefined
    this.reconciler?.close()
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
      if (message.type === 'hello' || message.type === 'auth') await this.handshake.receive(message, this.handshakeIo)
      else if (message.type === 'hello-ok') this.onHelloOk()
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
        if (this.requests.onVersions(message.entries, this.now(), this.requestServer)) await this.onVersions(message.entries)
        return
      case 'delta':
        return this.onCommit(message.seq, [message.entry])
      case 'transaction':
        // INDEPENDENT counts only as this side announced it (else it is a TRANSACTION like any).
        return this.onCommit(message.seq, message.entries, message.independent === true && this.takesIndependent)
      case 'ack':
        this.onAck(message.seq)
        return
      case 'done':
        // What it covers is acknowledged only once the commits before it are durable.
        await this.allSettled()
        if (this.stateValue !== 'closed') this.onDone(message.seq)
        return
      case 'request':
        this.requests.onRequest(this.now(), this.requestServer)
        return
      case 'reject':
        this.onReject(message)
        return
      case 'chunk':
        this.stat.unexpected++
        return
      case 'presence':
        this.onPresence(message.entries)
        return
      case 'provenance':
        if (!this.takesProvenance) this.stat.unexpected++
        else this.pendingProvenance = message
        return
      case 'ranges':
        if (this.reconciler) await this.reconciler.onRanges(message)
        else this.stat.unexpected++
        return
      case 'want':
        if (this.reconciler) await this.reconciler.onWant(message)
        else this.stat.unexpected++
        return
    }
  }

  /**
   * ACK and REJECT of the commits this side sent are handled as they
   * arrive, ahead of the inbox (in their order): they are about what this
   * side sent, not ordered with what the remote sends, and behind a
   * handler that computes an answer (RANGES, VERSIONS) they would keep the
   * window shut until it ends: the streamed part of a first sync stalled
   * with the remote idle (100,000 names: 2.5 s of 11). Before the session is
   * open they are queued (and counted unexpected) as before.
   */
  private handleAhead(message: DecodedMessage): boolean {
    if (this.stateValue !== 'open' || this.closing) return false
    if (message.type === 'ack') this.onAck(message.seq)
    else if (message.type === 'reject') this.onReject(message)
    else return false
    return true
  }

  private onReject(message: Extract<DecodedMessage, { type: 'reject' }>): void {
    this.stat.rejectedByRemote++
    this.events.emit('rejected', { seq: message.seq, name: message.name, code: message.code, message: message.message })
    if (this.outbox.bundleRejected(message.seq, message.name) === 'records') this.antiEntropy.recordsRefused(message.name)
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

  /** HELLO and AUTH go to the handshake, which answers (AUTH, HELLO-OK or REFUSE) through this. */
  private readonly handshakeIo: HandshakeIo = {
    send: (message) => {
      if (!this.violated) this.sendControl(message)
    },
    refuse: (reason, message) => this.refuse(reason, message),
    authenticate: (peer, presented) => this.admission.authenticate(peer, presented),
    active: () => this.stateValue !== 'closed' && !this.closing,
    unexpected: () => {
      this.stat.unexpected++
    },
    accepted: () => {
      const remote = this.handshake.remote!
      this.remoteWindowBytes = windowBytesOf(remote)
      if (this.options.reconcile !== false && takesReconcile(remote)) this.reconciler = this.newReconciler()
      this.maybeOpen()
    },
  }

  private newReconciler(): Reconciler {
    return new Reconciler({
      host: this.host,
      filter: this.filter,
      remoteFilter: () => this.handshake.remote!.filter,
      mayRead: (name) => this.admission.mayRead(this.handshake.remote?.agentId, name),
      send: (message) => this.sendControl(message),
      answer: (names, entries) => this.answerRemote(entries, names),
      fallback: () => this.antiEntropy.sendVersions({ full: true }),
      fail: (reason) => this.close(reason),
      admit: () => this.requests.reconciliation(this.now()),
      dropped: () => {
        this.stat.deferredRequests++
      },
      mutual: () => sameFilter(this.filter, this.handshake.remote!.filter),
      dialer: this.options.direction !== 'inbound',
      fromRemote: (origin) => origin === this,
    })
  }

  private onHelloOk(): void {
    if (!this.handshake.helloOk()) {
      this.stat.unexpected++
      return
    }
    this.maybeOpen()
  }

  private maybeOpen(): void {
    if (!this.handshake.complete || this.stateValue !== 'handshake' || this.violated) return
    this.stateValue = 'open'
    this.outbox.lastAckProgressAt = this.now()
    this.unsubscribe = this.host.subscribe((commit) => this.onLocalCommit(commit))
    this.events.emit('open', { agentId: this.handshake.remote!.agentId, version: this.handshake.version })
    this.antiEntropy.sendVersions({ opening: true })
  }

  private onVersions(entries: readonly VersionEntry[]): Promise<void> {
    return this.answerRemote(entries)
  }

  /** Answers the remote's VERSIONS, or its WANT (`only`: the names it covers). */
  private async answerRemote(entries: readonly VersionEntry[], only?: HostedName[]): Promise<void> {
    const remote = this.handshake.remote!
    await this.antiEntropy.answer(
      entries,
      {
        filter: remote.filter,
        mayRead: (name) => this.admission.mayRead(remote.agentId, name),
        host: this.host,
        malformed: (why) => this.malformed(why),
        records:
          this.takesAnswerRecords && takesAnswerRecords(remote.extensions)
            ? { agentId: this.options.agentId, signatures: this.takesSignatures && takesSignatures(remote.extensions) }
            : undefined,
        answered: (records, merged) => {
          this.stat.answerRecords += records
          this.stat.answerMerged += merged
        },
      },
      () => this.stateValue === 'closed',
      only,
    )
  }

  private get takesProvenance(): boolean {
    return this.options.provenance !== false
  }

  /** Whether this side takes (and sends) anti-entropy answers made of records: with provenance, unless `answerRecords: false`. */
  private get takesAnswerRecords(): boolean {
    return this.takesProvenance && this.options.answerRecords !== false
  }

  private get takesIndependent(): boolean {
    return this.options.independent !== false
  }

  private get takesSignatures(): boolean {
    return this.takesProvenance && this.options.signatures !== false
  }

  /** What the remote's HELLO announced, read once (its extensions are decoded, and every commit asks). */
  private remoteTakes: { readonly of: object; readonly signatures: boolean; readonly provenance: boolean } | undefined

  private remoteTaking(remote: { readonly extensions: ReadonlyArray<{ readonly key: string; readonly value: Uint8Array }> }) {
    if (this.remoteTakes?.of !== remote) {
      this.remoteTakes = { of: remote, signatures: takesSignatures(remote.extensions), provenance: takesProvenance(remote.extensions) }
    }
    return this.remoteTakes
  }

  /**
   * Handles a remote commit: the next message is taken as soon as this one
   * is applied and its write queued (the host's `applied`), or once it
   * settled (a host that cannot tell, a refusal); it is acknowledged only
   * once durable, in order (ACK is cumulative over what is durable).
   */
  private async onCommit(seq: number, entries: readonly DeltaEntry[], independent = false): Promise<void | { readonly settled: Promise<void> }> {
    this.stat.commitsIn++
    const provenance = this.pendingProvenance?.seq === seq ? this.pendingProvenance : undefined
    this.pendingProvenance = undefined
    if (this.ledger.isDuplicate(seq)) {
      this.stat.duplicates++
      this.maybeAck(true)
      return
    }
    if (this.ledger.isGap(seq)) {
      this.stat.gaps++
      if (!this.antiEntropy.pending) this.antiEntropy.sendVersions()
    }
    this.ledger.begin(seq)
    let onApplied!: () => void
    const applied = new Promise<'applied'>((resolve) => {
      onApplied = () => resolve('applied')
    })
    const settled = this.settleCommit(seq, entries, onApplied, provenance, independent)
    this.settling.add(settled)
    void settled.then(() => {
      this.settling.delete(settled)
    })
    if ((await Promise.race([applied, settled.then(() => 'settled' as const)])) === 'settled') return
    return { settled }
  }

  /** Commits handled and not yet settled (durable, refused or failed). */
  private readonly settling = new Set<Promise<void>>()

  /** Resolves once every commit handled so far has settled. */
  private async allSettled(): Promise<void> {
    while (this.settling.size > 0) await Promise.all([...this.settling])
  }

  /** Admits a remote commit and, once durable or refused, records and acknowledges it. Never rejects. */
  private async settleCommit(
    seq: number,
    entries: readonly DeltaEntry[],
    applied: () => void,
    provenance: ProvenanceMessage | undefined,
    independent: boolean,
  ): Promise<void> {
    try {
      const remote = this.handshake.remote!
      const signable = this.takesSignatures && this.remoteTaking(remote).signatures
      const admitted = await this.admission.admit(remote.agentId, entries, this, applied, provenance, signable, independent)
      if ('refused' in admitted && this.stateValue !== 'closed') {
        const { name, code, message } = admitted.refused
        if (code === ErrorCodes.DECODE_ERROR) this.malformed(`undecodable delta for "${name}"`)
        this.refuseWrite(seq, name, code, message)
      }
    } catch (error) {
      if (this.stateValue === 'closed') return
      // Not persisted (storage failure): do not acknowledge; the remote resyncs on reconnect.
      this.close(`could not apply a remote commit: ${(error as Error)?.message ?? String(error)}`)
      return
    }
    if (this.stateValue === 'closed') return
    this.ledger.markReceived(seq)
    const { ackDelayMs = 0, setTimer } = this.options
    if (ackDelayMs > 0 && setTimer !== undefined) {
      // Coalesced: the commits that settle within ackDelayMs get one ACK, sent with the commit that settles
      // after it (no wakeup of its own while commits keep coming), with our next commit, or by the timer.
      const now = this.now()
      if (this.ackDeferred === undefined) {
        this.ackDeferred = { since: now, cancel: setTimer(() => this.deferredAck(), ackDelayMs) }
        if (this.ledger.ackBacklog < this.ledger.ackEvery) return
      } else if (now - this.ackDeferred.since < ackDelayMs && this.ledger.ackBacklog < this.ledger.ackEvery) return
      this.deferredAck()
      return
    }
    // Commits made durable by one write settle together: one ACK for them.
    if (!this.ackQueued) {
      this.ackQueued = true
      queueMicrotask(() => {
        this.ackQueued = false
        this.maybeAck(false)
      })
    }
  }

  /** When a keepalive (a repeated ACK) last went out (see {@link tick}). */
  private keepaliveAt = Number.NEGATIVE_INFINITY
  /** Whether a chunk of the remote arrived since the last keepalive. */
  private chunksSinceKeepalive = false

  /**
   * A frame of the remote arrived. Parts of an answer to our resync (a
   * chunk, a commit, RANGES, WANT) and ACKs (the remote taking what we sent,
   * or saying it is still busy with it: a keepalive) mean the resync is
   * progressing: its timeout measures silence from here.
   */
  private arrived(kind: DecodedMessage['type']): void {
    if (kind === 'chunk') this.chunksSinceKeepalive = true
    if (kind === 'chunk' || kind === 'delta' || kind === 'transaction' || kind === 'ranges' || kind === 'want' || kind === 'ack') {
      this.antiEntropy.progress(this.now())
    }
  }

  /** REQUESTs sent for stalled acknowledgements since the last that moved (see {@link tick}). */
  private stalledRequests = 0

  /** An ACK check is queued (see {@link settleCommit}). */
  private ackQueued = false
  /** A coalesced ACK is due within `ackDelayMs` of `since` (see {@link settleCommit}); `cancel` stops its timer. */
  private ackDeferred: { readonly since: number; readonly cancel: () => void } | undefined

  /** Sends the coalesced ACK now (if the receive queue lets it, see {@link InboundLedger.nextAck}). */
  private deferredAck(): void {
    this.ackDeferred?.cancel()
    this.ackDeferred = undefined
    this.maybeAck(false)
  }

  private refuseWrite(seq: number, name: string, code: string, message: string): void {
    this.stat.refusedWrites++
    this.events.emit('refused-write', { name, code, message })
    this.sendControl({ type: 'reject', seq, name, code, message })
  }

  private maybeAck(force: boolean): void {
    const seq = this.ledger.nextAck(force)
    if (seq !== undefined) this.sendControl({ type: 'ack', seq })
  }

  private onAck(seq: number): void {
    const result = this.outbox.acknowledge(seq, this.now)
    if (result === 'unexpected') {
      this.stat.unexpected++
      return
    }
    if (result === 'stale') {
      // A repeat (a keepalive): the remote is still taking what we sent; acknowledgements have not stalled.
      this.outbox.lastAckProgressAt = this.now()
      return
    }
    this.stalledRequests = 0
    this.events.emit('ack', { seq })
    this.outbox.releaseWaiters(seq)
    this.outbox.pump()
  }

  private onDone(seq: number): void {
    // Everything the remote had up to its commit `seq` is now applied here.
    this.ledger.cover(seq)
    const first = this.antiEntropy.done()
    this.maybeAck(true)
    if (first) this.events.emit('synced', { agentId: this.handshake.remote!.agentId })
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
    const claimed = commit.provenance
    const signatures =
      this.takesSignatures && this.remoteTaking(remote).signatures && entries.some((entry) => entry.signature !== undefined)
        ? entries.map((entry) => entry.signature)
        : undefined
    const provenance =
      claimed &&
      this.takesProvenance &&
      this.remoteTaking(remote).provenance &&
      (claimed.agent !== this.options.agentId || claimed.message !== undefined || claimed.metaJson !== undefined || signatures !== undefined)
        ? signatures
          ? { ...claimed, signatures }
          : claimed
        : undefined
    // A coalesced ACK goes along (in the same socket write, on a transport that corks a turn's frames).
    if (this.ackDeferred !== undefined) this.deferredAck()
    if (!this.outbox.queueCommit(entries, provenance)) {
      // Too far behind: the queue was dropped; resync from the remote's versions instead.
      this.stat.overflows++
      this.sendControl({ type: 'request' })
    }
  }
}
