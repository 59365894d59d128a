/**
 * One sync session: the protocol state machine for one connection, between
 * the local {@link SyncHost} and a remote peer. Transport-agnostic: the
 * caller feeds received frames to {@link SyncSession.receive} and gives a
 * {@link SyncChannel} to send frames on. No timers inside: the caller may
 * drive {@link SyncSession.tick} for timeouts and periodic anti-entropy.
 *
 * Lifecycle (see sync/PROTOCOL.md): both sides send HELLO; each checks the
 * other's versions and credentials and answers HELLO-OK or REFUSE; once a
 * side has accepted the remote HELLO and received HELLO-OK, the session is
 * open and sends VERSIONS. Each side answers a VERSIONS with the commits the
 * other lacks then DONE, and from then on forwards local commits live.
 * Received commits are applied in order, all or none, and acknowledged once
 * persisted.
 */
import { Emitter, type Unsubscribe } from '../crdt/emitter.ts'
import { ConcordError, ErrorCodes, isConcordError } from '../crdt/errors.ts'
import { TokenBucket } from './token-bucket.ts'
import { Reassembler, splitIntoChunks, MIN_FRAME_BYTES } from './chunking.ts'
import type { Access, LocalCommit, SyncHost } from './host.ts'
import {
  FRAME_FORMAT, MIN_PROTOCOL_VERSION, PROTOCOL_VERSION, decodeMessage, encodeMessage,
  type DecodedMessage, type DeltaEntry, type HelloMessage, type Message, type PeerId, type RefuseReason,
  type VersionEntry,
} from './messages.ts'
import { ALL_NAMES, matchesFilter, type NameFilter } from './names.ts'

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
  readonly peerId: PeerId
  /** Credentials presented to the remote (empty by default). */
  readonly token?: string
  /** The names this side wants to receive (default: all). */
  readonly filter?: NameFilter
  /** Largest frame accepted and sent; bigger messages are chunked (default 1 MiB). */
  readonly maxFrameBytes?: number
  /** Largest reassembled message accepted (default 64 MiB). */
  readonly maxMessageBytes?: number
  /** Unacknowledged commits the remote may have in flight to us (default 256). */
  readonly window?: number
  /** Queued outgoing commits beyond which the queue is replaced by a resync (default 4096). */
  readonly maxQueuedCommits?: number
  /** Malformed frames tolerated before the peer is refused with `protocol` (default 16). */
  readonly maxMalformed?: number
  /** Acknowledge at least every this many commits (default 32). */
  readonly ackEvery?: number
  /** {@link SyncSession.tick}: close if the handshake is not done within this (default 10 s). */
  readonly handshakeTimeoutMs?: number
  /** {@link SyncSession.tick}: repeat a resync or ask for one when nothing moved within this (default 5 s). */
  readonly resyncTimeoutMs?: number
  /** {@link SyncSession.tick}: send VERSIONS this often (default 0: only on connect and on gaps). */
  readonly antiEntropyIntervalMs?: number
  /** Protocol versions offered (tests use it to check refusals; default this code's range). */
  readonly versions?: { readonly min: number; readonly max: number }
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
  readonly now?: () => number
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
  /** Times the outgoing queue overflowed and was replaced by a resync. */
  overflows: number
  /** Frames that waited for the inbound rate limit. */
  deferred: number
}

/** Events of a {@link SyncSession}. */
export interface SessionEvents extends Record<string, unknown> {
  /** Handshake done; data may flow. */
  open: { readonly peerId: PeerId; readonly version: number }
  /** The first answer to our VERSIONS is applied: we hold what the remote held then. */
  synced: { readonly peerId: PeerId }
  /** The connection was refused, by this side (`local`) or the remote. */
  refused: { readonly by: 'local' | 'remote'; readonly reason: RefuseReason; readonly message: string }
  /** The remote refused one of our commits. */
  rejected: { readonly seq: number; readonly name: string; readonly code: string; readonly message: string }
  /** We refused one of the remote's commits (never applied). */
  'refused-write': { readonly name: string; readonly code: string; readonly message: string }
  /** The remote acknowledged our commits up to `seq`. */
  ack: { readonly seq: number }
  /** The session ended. */
  close: { readonly reason?: string }
}

/** State of a session. */
export type SessionState = 'handshake' | 'open' | 'closed'

type DataItem =
  /** `answer`: part of an anti-entropy answer (see {@link ANSWER_BUNDLE_BYTES}). */
  | { readonly kind: 'commit'; readonly entries: readonly DeltaEntry[]; readonly answer?: boolean }
  | { readonly kind: 'done' }
  | { readonly kind: 'mark'; readonly resolve: () => void }

const DEFAULT_MAX_FRAME = 1024 * 1024

/**
 * An anti-entropy answer travels as few TRANSACTIONs as possible: the names
 * it carries are bundled (up to this many delta bytes per bundle) so that
 * the receiver applies them all or none. A multi-name transaction whose
 * names were answered separately could otherwise land half on a receiver
 * that crashes between them.
 */
export const ANSWER_BUNDLE_BYTES = 16 * 1024 * 1024

/** The protocol state machine of one connection. See the module comment. */
export class SyncSession {
  readonly events = new Emitter<SessionEvents>()
  private readonly stat: SessionStats = {
    framesIn: 0, framesOut: 0, bytesIn: 0, bytesOut: 0, malformed: 0, unknown: 0, unexpected: 0,
    commitsIn: 0, commitsOut: 0, duplicates: 0, gaps: 0, refusedWrites: 0, rejectedByRemote: 0,
    chunksIn: 0, chunksOut: 0, versionsSent: 0, overflows: 0, deferred: 0,
  }

  private readonly filter: NameFilter
  private readonly maxFrameBytes: number
  private readonly window: number
  private readonly maxQueued: number
  private readonly maxMalformed: number
  private readonly ackEvery: number
  private readonly minVersion: number
  private readonly maxVersion: number
  private readonly now: () => number
  private readonly reassembler: Reassembler
  private readonly rateLimiter: TokenBucket | undefined
  /** Frames waiting for the rate limit, in arrival order. */
  private readonly deferred: Uint8Array[] = []
  private deferredBytes = 0

  private stateValue: SessionState = 'handshake'
  private remoteHello: HelloMessage | undefined
  private helloOkReceived = false
  private closing = false
  private readonly startedAt: number
  private unsubscribe: Unsubscribe | undefined

  // inbound
  private inbox: Promise<void> = Promise.resolve()
  private inboxCommits = 0
  /** Remote commits received without a gap: 1..applied. */
  private applied = 0
  /** Remote commits received beyond a gap. */
  private readonly receivedAhead = new Set<number>()
  /** Remote commits covered by a DONE (an anti-entropy answer). */
  private covered = 0
  private lastAckSent = 0
  private resyncPendingSince: number | undefined
  private lastVersionsAt = 0
  private syncedOnce = false

  // outbound
  /** Control frames, in order; a VERSIONS slot waits for its (possibly async) contents. */
  private readonly control: Array<Uint8Array | { frame?: Uint8Array }> = []
  private data: DataItem[] = []
  /** Number of `commit` items in {@link data} (kept so queueing stays O(1)). */
  private queuedCommits = 0
  private live = false
  private lastSeq = 0
  private acked = 0
  private windowBase = 0
  private lastAckProgressAt: number
  private nextChunkId = 0
  private pumping = false
  private readonly waiters: Array<{ target: number; resolve: () => void }> = []
  /** Answer bundles of several names sent and not yet acknowledged, by seq (resent without a name the remote rejects). */
  private readonly bundles = new Map<number, readonly DeltaEntry[]>()
  private readonly rejecters = new Set<(error: Error) => void>()

  constructor(
    private readonly host: SyncHost,
    private readonly channel: SyncChannel,
    private readonly options: SessionOptions,
  ) {
    this.filter = options.filter ?? ALL_NAMES
    this.maxFrameBytes = Math.max(MIN_FRAME_BYTES, options.maxFrameBytes ?? DEFAULT_MAX_FRAME)
    this.window = Math.max(1, options.window ?? 256)
    this.maxQueued = Math.max(1, options.maxQueuedCommits ?? 4096)
    this.maxMalformed = options.maxMalformed ?? 16
    this.ackEvery = Math.max(1, options.ackEvery ?? 32)
    this.minVersion = options.versions?.min ?? MIN_PROTOCOL_VERSION
    this.maxVersion = options.versions?.max ?? PROTOCOL_VERSION
    this.now = options.now ?? Date.now
    this.reassembler = new Reassembler({ maxMessageBytes: options.maxMessageBytes ?? 64 * 1024 * 1024, maxPartial: 4 })
    this.startedAt = this.now()
    const rate = options.rateLimit
    this.rateLimiter = rate ? new TokenBucket(rate.bytesPerSecond, rate.burstBytes ?? rate.bytesPerSecond, this.startedAt) : undefined
    this.lastAckProgressAt = this.startedAt
  }

  /** Current state. */
  get state(): SessionState {
    return this.stateValue
  }

  /** The remote peer's id, once its HELLO was accepted. */
  get remotePeerId(): PeerId | undefined {
    return this.remoteHello?.peerId
  }

  /** The names the remote asked for, once its HELLO was accepted. */
  get remoteFilter(): NameFilter | undefined {
    return this.remoteHello?.filter
  }

  /** A copy of the counters. */
  get stats(): Readonly<SessionStats> {
    return { ...this.stat }
  }

  /** Highest of our commits the remote acknowledged (persisted or refused). */
  get ackedSeq(): number {
    return this.acked
  }

  /** Highest sequence number given to one of our commits on this session. */
  get sentSeq(): number {
    return this.lastSeq
  }

  /** Sends HELLO. Call once, right after creating the session. */
  start(): void {
    this.sendControl({
      type: 'hello', minVersion: this.minVersion, maxVersion: this.maxVersion, peerId: this.options.peerId,
      token: this.options.token ?? '', filter: this.filter, maxFrameBytes: this.maxFrameBytes, window: this.window, extensions: [],
    })
  }

  /** Handles one frame from the remote. Never throws. */
  receive(frame: Uint8Array): void {
    if (this.stateValue === 'closed' || this.closing) return
    this.stat.framesIn++
    this.stat.bytesIn += frame.length
    if (this.rateLimiter) {
      this.drainDeferred(this.now())
      if (this.deferred.length > 0 || !this.rateLimiter.tryTake(frame.length, this.now())) {
        this.deferred.push(frame)
        this.deferredBytes += frame.length
        this.stat.deferred++
        const max = this.options.rateLimit!.maxDeferredBytes ?? 4 * this.rateLimiter.burst
        if (this.deferredBytes > max) {
          this.refuse('limit', `over the inbound rate limit of ${this.rateLimiter.ratePerSecond} bytes/s (${this.deferredBytes} bytes waiting)`)
        }
        return
      }
    }
    this.process(frame)
  }

  /** Processes frames that waited for the rate limit, as far as the bucket allows. */
  private drainDeferred(now: number): void {
    while (this.deferred.length > 0 && !this.closing && this.stateValue !== 'closed' && this.rateLimiter!.tryTake(this.deferred[0].length, now)) {
      const frame = this.deferred.shift()!
      this.deferredBytes -= frame.length
      this.process(frame)
    }
  }

  /** Decodes one frame (reassembling chunks) and queues it for handling, in order. */
  private process(frame: Uint8Array): void {
    if (frame.length > this.maxFrameBytes) {
      this.malformed(`frame of ${frame.length} bytes over the limit of ${this.maxFrameBytes}`)
      return
    }
    let message: DecodedMessage
    try {
      message = decodeMessage(frame)
      if (message.type === 'chunk') {
        this.stat.chunksIn++
        const whole = this.reassembler.add(message)
        if (!whole) return
        message = decodeMessage(whole)
        if (message.type === 'chunk') throw new ConcordError(ErrorCodes.PROTOCOL_ERROR, 'a chunk inside a chunk')
      }
    } catch (error) {
      if (!this.remoteHello && frame.length > 0 && frame[0] !== FRAME_FORMAT) {
        this.refuse('version', `unknown frame format ${frame[0]}; this peer speaks frame format ${FRAME_FORMAT}`)
        return
      }
      this.malformed((error as Error).message)
      return
    }
    const decoded = message
    if (decoded.type === 'refuse') {
      // Handled at once, not behind the inbox: the remote closes right after
      // sending it, and a transport may report that close before the inbox
      // gets to the frame (the refusal would then look like a dropped link).
      void this.handle(decoded)
      return
    }
    const isCommit = decoded.type === 'delta' || decoded.type === 'transaction'
    if (isCommit) {
      this.inboxCommits++
      if (this.inboxCommits > 2 * this.window + 64) {
        this.refuse('limit', `more than ${2 * this.window + 64} unacknowledged commits queued (window ${this.window})`)
        return
      }
    }
    this.inbox = this.inbox.then(async () => {
      if (isCommit) this.inboxCommits--
      if (this.stateValue === 'closed' || this.closing) return
      try {
        await this.handle(decoded)
      } catch (error) {
        this.close(`internal error: ${(error as Error)?.message ?? String(error)}`)
      }
    })
  }

  /**
   * Drives time-based behaviour: handshake timeout, repeating a resync that
   * got no answer, asking for a resync when acknowledgements stall, and the
   * periodic anti-entropy. Call it now and then (or never, on a reliable
   * transport without a periodic resync).
   */
  tick(now: number = this.now()): void {
    if (this.stateValue === 'closed' || this.closing) return
    if (this.rateLimiter) this.drainDeferred(now)
    const handshakeTimeout = this.options.handshakeTimeoutMs ?? 10_000
    if (this.stateValue === 'handshake') {
      if (now - this.startedAt >= handshakeTimeout) this.close('handshake timeout')
      return
    }
    const resyncTimeout = this.options.resyncTimeoutMs ?? 5_000
    if (this.resyncPendingSince !== undefined && now - this.resyncPendingSince >= resyncTimeout) {
      this.sendVersions()
    }
    const stalled = this.lastSeq > this.acked || (this.queuedCommits > 0 && !this.windowOpen())
    if (stalled && now - this.lastAckProgressAt >= resyncTimeout) {
      this.lastAckProgressAt = now
      this.sendControl({ type: 'request' })
    }
    const interval = this.options.antiEntropyIntervalMs ?? 0
    if (interval > 0 && now - this.lastVersionsAt >= interval && this.resyncPendingSince === undefined) this.sendVersions()
  }

  /**
   * Resolves when the remote has acknowledged (persisted) every commit this
   * session was given before the call, including the initial anti-entropy
   * answer; rejects with `CONCORD_CLOSED` if the session ends first, or
   * `CONCORD_ABORTED` on `signal`.
   */
  whenAcked(options: { signal?: AbortSignal } = {}): Promise<void> {
    if (this.stateValue === 'closed') return Promise.reject(new ConcordError(ErrorCodes.CLOSED, 'session closed'))
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => finish(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
      const finish = (error?: Error): void => {
        this.rejecters.delete(finish)
        options.signal?.removeEventListener('abort', onAbort)
        if (error) reject(error)
        else resolve()
      }
      if (options.signal?.aborted) return reject(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
      options.signal?.addEventListener('abort', onAbort, { once: true })
      this.rejecters.add(finish)
      this.data.push({ kind: 'mark', resolve: () => finish() })
      this.pump()
    })
  }

  /**
   * Anti-entropy now, pulling: sends our VERSIONS; the remote answers with
   * what we lack, then DONE. For a peer whose live deltas travel another way
   * (gossipsub) and that saw a gap in them. No-op unless open.
   */
  pull(): void {
    if (this.stateValue !== 'open' || this.closing) return
    this.sendVersions()
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
    this.live = false
    this.sendControl({ type: 'request' })
  }

  /** Refuses the connection with `reason` (sends REFUSE, then closes). */
  refuse(reason: RefuseReason, message: string): void {
    if (this.stateValue === 'closed' || this.closing) return
    this.events.emit('refused', { by: 'local', reason, message })
    const frame = encodeMessage({ type: 'refuse', reason, message, minVersion: this.minVersion, maxVersion: this.maxVersion })
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
    this.unsubscribe?.()
    this.unsubscribe = undefined
    this.reassembler.clear()
    this.data = []
    this.queuedCommits = 0
    this.control.length = 0
    this.bundles.clear()
    const error = new ConcordError(ErrorCodes.CLOSED, `session closed${reason ? `: ${reason}` : ''}`)
    for (const reject of [...this.rejecters]) reject(error)
    this.waiters.length = 0
    this.events.emit('close', { reason })
  }

  private malformed(why: string): void {
    this.stat.malformed++
    if (this.stat.malformed > this.maxMalformed) {
      this.refuse('protocol', `too many malformed frames (last: ${why})`)
    }
  }

  // ---- inbound -----------------------------------------------------------

  private async handle(message: DecodedMessage): Promise<void> {
    if (message.type === 'unknown') {
      this.stat.unknown++
      return
    }
    if (message.type === 'refuse') {
      this.events.emit('refused', { by: 'remote', reason: message.reason, message: message.message })
      this.close(`refused by remote: ${message.reason}: ${message.message}`)
      return
    }
    if (this.stateValue === 'handshake') {
      if (message.type === 'hello') await this.onHello(message)
      else if (message.type === 'hello-ok') this.onHelloOk()
      else this.stat.unexpected++ // data before the handshake: dropped, never applied
      return
    }
    switch (message.type) {
      case 'hello':
      case 'hello-ok':
        this.stat.unexpected++
        return
      case 'versions':
        await this.onVersions(message.entries)
        return
      case 'delta':
        await this.onCommit(message.seq, [message.entry])
        return
      case 'transaction':
        await this.onCommit(message.seq, message.entries)
        return
      case 'ack':
        this.onAck(message.seq)
        return
      case 'done':
        this.onDone(message.seq)
        return
      case 'request':
        this.sendVersions()
        return
      case 'reject':
        this.stat.rejectedByRemote++
        this.events.emit('rejected', { seq: message.seq, name: message.name, code: message.code, message: message.message })
        this.onBundleRejected(message.seq, message.name)
        return
      case 'chunk':
        this.stat.unexpected++
        return
    }
  }

  private async onHello(hello: HelloMessage): Promise<void> {
    if (this.remoteHello) {
      this.stat.unexpected++
      return
    }
    const version = Math.min(this.maxVersion, hello.maxVersion)
    if (version < Math.max(this.minVersion, hello.minVersion)) {
      this.refuse('version', `incompatible protocol versions: remote speaks ${hello.minVersion}..${hello.maxVersion}, this peer ${this.minVersion}..${this.maxVersion}`)
      return
    }
    let ok = false
    try {
      ok = await this.host.authenticate(hello.peerId, hello.token)
    } catch {
      ok = false
    }
    if (this.stateValue === 'closed' || this.closing) return
    if (!ok) {
      this.refuse('auth', `credentials refused for peer "${hello.peerId}"`)
      return
    }
    this.remoteHello = hello
    this.sendControl({ type: 'hello-ok', version })
    this.maybeOpen()
  }

  private onHelloOk(): void {
    if (this.helloOkReceived) {
      this.stat.unexpected++
      return
    }
    this.helloOkReceived = true
    this.maybeOpen()
  }

  private maybeOpen(): void {
    if (!this.remoteHello || !this.helloOkReceived || this.stateValue !== 'handshake') return
    this.stateValue = 'open'
    this.lastAckProgressAt = this.now()
    this.unsubscribe = this.host.subscribe((commit) => this.onLocalCommit(commit))
    const version = Math.min(this.maxVersion, this.remoteHello.maxVersion)
    this.events.emit('open', { peerId: this.remoteHello.peerId, version })
    this.sendVersions()
  }

  private async onVersions(entries: readonly VersionEntry[]): Promise<void> {
    const remote = this.remoteHello!
    // Everything queued is superseded by the answer computed now.
    const marks = this.data.filter((item) => item.kind === 'mark')
    this.data = []
    this.queuedCommits = 0
    this.windowBase = this.lastSeq
    this.live = true
    const theirs = new Map<string, VersionEntry>()
    for (const entry of entries) theirs.set(entry.name, entry)
    const names = await this.host.list()
    if (this.stateValue === 'closed') return
    const answer: DataItem[] = []
    let bundle: DeltaEntry[] = []
    let bundleBytes = 0
    const closeBundle = (): void => {
      if (bundle.length > 0) answer.push({ kind: 'commit', entries: bundle, answer: true })
      bundle = []
      bundleBytes = 0
    }
    for (const { name, type } of names) {
      if (!matchesFilter(remote.filter, name) || this.access(name) === 'none') continue
      const known = theirs.get(name)
      if (known && known.replicaType !== type) continue // the remote would refuse it: a type mismatch
      let delta: Uint8Array | null
      try {
        delta = this.host.deltaSince(name, known ? known.version : null)
      } catch (error) {
        if (!isConcordError(error, ErrorCodes.DECODE_ERROR)) throw error
        this.malformed(`bad version for "${name}"`)
        continue
      }
      if (!delta) continue
      if (bundle.length > 0 && bundleBytes + delta.length > ANSWER_BUNDLE_BYTES) closeBundle()
      bundle.push({ name, replicaType: type, delta })
      bundleBytes += delta.length
    }
    closeBundle()
    this.data.push(...answer, { kind: 'done' }, ...marks)
    this.queuedCommits += answer.length
    this.pump()
  }

  private access(name: string): Access {
    try {
      return this.host.access(this.remoteHello!.peerId, name)
    } catch {
      return 'none'
    }
  }

  private async onCommit(seq: number, entries: readonly DeltaEntry[]): Promise<void> {
    this.stat.commitsIn++
    if (seq <= this.applied || this.receivedAhead.has(seq)) {
      this.stat.duplicates++
      this.maybeAck(true)
      return
    }
    // A commit covered by a DONE may still arrive late (reordering): it is applied (harmless if seen).
    if (seq - 1 > Math.max(this.applied, this.covered) && !this.receivedAhead.has(seq - 1)) {
      this.stat.gaps++
      if (this.resyncPendingSince === undefined) this.sendVersions()
    }
    const refusal = this.checkWrite(entries)
    if (refusal) {
      this.refuseWrite(seq, refusal.name, refusal.code, refusal.message)
    } else {
      try {
        await this.host.applyRemote(entries, this)
      } catch (error) {
        if (this.stateValue === 'closed') return
        const code = isConcordError(error) ? error.code : undefined
        if (code === ErrorCodes.DECODE_ERROR || code === ErrorCodes.TYPE_MISMATCH || code === ErrorCodes.FORBIDDEN || code === ErrorCodes.INVALID_ARGUMENT) {
          if (code === ErrorCodes.DECODE_ERROR) this.malformed(`undecodable delta for "${entries[0].name}"`)
          this.refuseWrite(seq, entries[0].name, code, (error as Error).message)
        } else {
          // Not persisted (storage failure): do not acknowledge; the remote resyncs on reconnect.
          this.close(`could not apply a remote commit: ${(error as Error)?.message ?? String(error)}`)
          return
        }
      }
    }
    if (this.stateValue === 'closed') return
    this.markReceived(seq)
    this.maybeAck(false)
  }

  private checkWrite(entries: readonly DeltaEntry[]): { name: string; code: string; message: string } | undefined {
    // A name may come several times (a transaction that changed it twice: its deltas apply in order), always as one type.
    const seen = new Map<string, string>()
    for (const entry of entries) {
      const type = seen.get(entry.name)
      if (type !== undefined && type !== entry.replicaType) {
        return { name: entry.name, code: ErrorCodes.PROTOCOL_ERROR, message: `"${entry.name}" as two types in one commit` }
      }
      seen.set(entry.name, entry.replicaType)
      if (!matchesFilter(this.filter, entry.name)) {
        return { name: entry.name, code: ErrorCodes.FORBIDDEN, message: `"${entry.name}" is outside the requested names` }
      }
      if (this.access(entry.name) !== 'write') {
        return { name: entry.name, code: ErrorCodes.FORBIDDEN, message: `peer "${this.remoteHello!.peerId}" may not write "${entry.name}"` }
      }
      const local = this.host.typeOf(entry.name)
      if (local !== undefined && local !== entry.replicaType) {
        return { name: entry.name, code: ErrorCodes.TYPE_MISMATCH, message: `"${entry.name}" is a ${local}, not a ${entry.replicaType}` }
      }
    }
    return undefined
  }

  private refuseWrite(seq: number, name: string, code: string, message: string): void {
    this.stat.refusedWrites++
    this.events.emit('refused-write', { name, code, message })
    this.sendControl({ type: 'reject', seq, name, code, message })
  }

  private markReceived(seq: number): void {
    if (seq === this.applied + 1) {
      this.applied = seq
      while (this.receivedAhead.delete(this.applied + 1)) this.applied++
    } else if (seq > this.applied) {
      this.receivedAhead.add(seq)
      if (this.receivedAhead.size > 4096) {
        // Commits lost for good (a faulty link): forget the gap; resyncs cover the content.
        this.applied = Math.max(...this.receivedAhead)
        this.receivedAhead.clear()
      }
    }
  }

  /** What we acknowledge: every remote commit up to it is applied here or covered by a DONE. */
  private get ackValue(): number {
    return Math.max(this.applied, this.covered)
  }

  private maybeAck(force: boolean): void {
    const value = this.ackValue
    if (value <= this.lastAckSent && !force) return
    if (force || this.inboxCommits === 0 || value - this.lastAckSent >= this.ackEvery) {
      this.lastAckSent = value
      this.sendControl({ type: 'ack', seq: value })
    }
  }

  private onAck(seq: number): void {
    if (seq > this.lastSeq) {
      this.stat.unexpected++
      return
    }
    if (seq <= this.acked) return
    this.acked = seq
    for (const bundled of this.bundles.keys()) if (bundled <= seq) this.bundles.delete(bundled)
    this.lastAckProgressAt = this.now()
    this.events.emit('ack', { seq })
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (this.waiters[i].target <= seq) {
        const [waiter] = this.waiters.splice(i, 1)
        waiter.resolve()
      }
    }
    this.pump()
  }

  private onDone(seq: number): void {
    // Everything the remote had up to its commit `seq` is now applied here.
    if (seq > this.covered) this.covered = seq
    this.resyncPendingSince = undefined
    this.maybeAck(true)
    if (!this.syncedOnce) {
      this.syncedOnce = true
      this.events.emit('synced', { peerId: this.remoteHello!.peerId })
    }
  }

  // ---- outbound ----------------------------------------------------------

  private sendVersions(): void {
    const now = this.now()
    this.resyncPendingSince = now
    this.lastVersionsAt = now
    this.stat.versionsSent++
    // Built asynchronously (list() may be async) but queued in order.
    const build = async (): Promise<VersionEntry[]> => {
      const entries: VersionEntry[] = []
      for (const { name, type } of await this.host.list()) {
        if (!matchesFilter(this.filter, name)) continue
        entries.push({ name, replicaType: type, version: this.host.version(name) })
      }
      return entries
    }
    const slot: { frame?: Uint8Array } = {}
    this.control.push(slot)
    build().then(
      (entries) => {
        slot.frame = encodeMessage({ type: 'versions', entries })
        this.pump()
      },
      (error) => this.close(`could not list names: ${(error as Error)?.message ?? String(error)}`),
    )
  }

  private sendControl(message: Message): void {
    if (this.stateValue === 'closed') return
    this.control.push(encodeMessage(message))
    this.pump()
  }

  private onLocalCommit(commit: LocalCommit): void {
    if (this.stateValue !== 'open' || this.closing || !this.live || commit.origin === this) return
    const remote = this.remoteHello!
    const entries = commit.entries.filter((entry) => matchesFilter(remote.filter, entry.name) && this.access(entry.name) !== 'none')
    if (entries.length === 0) return
    this.data.push({ kind: 'commit', entries })
    this.queuedCommits++
    if (this.queuedCommits > this.maxQueued) {
      // Too far behind: drop the queue and resync from the remote's versions instead.
      this.stat.overflows++
      this.data = this.data.filter((item) => item.kind === 'mark')
      this.queuedCommits = 0
      this.live = false
      this.sendControl({ type: 'request' })
      return
    }
    this.pump()
  }

  /**
   * The remote refused an answer bundle because of one name (its access
   * rules, filter or a delta it cannot decode): the other names of the
   * bundle are sent again without it, so one refused name never holds back
   * the others.
   */
  private onBundleRejected(seq: number, name: string): void {
    const entries = this.bundles.get(seq)
    if (!entries) return
    this.bundles.delete(seq)
    const rest = entries.filter((entry) => entry.name !== name)
    if (rest.length === 0 || !this.live) return
    this.data.unshift({ kind: 'commit', entries: rest, answer: true })
    this.queuedCommits++
    this.pump()
  }

  private windowOpen(): boolean {
    const remoteWindow = this.remoteHello?.window ?? 1
    return this.lastSeq - Math.max(this.acked, this.windowBase) < remoteWindow
  }

  private nextFrames(): Uint8Array[] | undefined {
    const head = this.control[0]
    if (head !== undefined) {
      if (head instanceof Uint8Array) {
        this.control.shift()
        return [head]
      }
      if (!head.frame) return undefined // VERSIONS still being built; keeps control order
      this.control.shift()
      return [head.frame]
    }
    // Before the remote's VERSIONS is answered nothing is due: marks wait for the answer.
    while (this.live && this.data.length > 0) {
      const item = this.data[0]
      if (item.kind === 'mark') {
        this.data.shift()
        if (this.acked >= this.lastSeq) item.resolve()
        else this.waiters.push({ target: this.lastSeq, resolve: item.resolve })
        continue
      }
      if (item.kind === 'done') {
        this.data.shift()
        return [encodeMessage({ type: 'done', seq: this.lastSeq })]
      }
      if (!this.windowOpen()) return undefined
      this.data.shift()
      this.queuedCommits--
      const seq = ++this.lastSeq
      this.stat.commitsOut++
      if (item.kind === 'commit' && item.answer && item.entries.length > 1) this.bundles.set(seq, item.entries)
      const message: Message = item.entries.length === 1
        ? { type: 'delta', seq, entry: item.entries[0] }
        : { type: 'transaction', seq, entries: item.entries }
      const frameLimit = Math.min(this.maxFrameBytes, Math.max(MIN_FRAME_BYTES, this.remoteHello?.maxFrameBytes ?? DEFAULT_MAX_FRAME))
      const frames = splitIntoChunks(encodeMessage(message), frameLimit, this.nextChunkId)
      if (frames.length > 1) {
        this.nextChunkId++
        this.stat.chunksOut += frames.length
      }
      return frames
    }
    return undefined
  }

  private pump(): void {
    if (this.pumping || this.stateValue === 'closed' || this.closing) return
    this.pumping = true
    void (async () => {
      try {
        for (;;) {
          if (this.stateValue === 'closed' || this.closing) return
          const frames = this.nextFrames()
          if (!frames) return
          for (const frame of frames) {
            this.stat.framesOut++
            this.stat.bytesOut += frame.length
            await this.channel.send(frame)
          }
        }
      } catch (error) {
        this.close(`send failed: ${(error as Error)?.message ?? String(error)}`)
      } finally {
        this.pumping = false
      }
    })()
  }
}
