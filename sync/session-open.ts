/**
 * A sync session from the HELLOs until it is open, and the remote's
 * requests it then serves: the handshake (versions, credentials; its AUTH,
 * HELLO-OK and REFUSE go out through here, none once the remote sent what
 * may not come before it), what the remote's HELLO agreed to (its byte
 * window, range-based reconciliation), when the session may open, and the
 * remote's VERSIONS, REQUEST and WANT answered through the anti-entropy
 * answer at the rate of the request gate.
 */
import type { Admission } from './admission.ts'
import type { AntiEntropy } from './anti-entropy.ts'
import { newNonce } from './credentials.ts'
import type { ExtensionUse } from './extension-use.ts'
import { takesReconcile, windowBytesOf } from './extensions.ts'
import { Handshake, PROOF_VERSION, type HandshakeIo } from './handshake.ts'
import type { HostedName, SyncHost } from './host.ts'
import type { Intake } from './intake.ts'
import { MIN_PROTOCOL_VERSION, PROTOCOL_VERSION, type Message, type RefuseReason, type VersionEntry } from './messages.ts'
import { sameFilter, type NameFilter } from './names.ts'
import { DEFAULT_REQUEST_RATE, RequestGate, type RequestServer } from './request-gate.ts'
import { Reconciler } from './reconcile-session.ts'
import type { SessionOptions, SessionStats } from './session-types.ts'

/** What {@link SessionOpening} needs of its session. */
export interface SessionOpeningContext {
  readonly host: SyncHost
  /** The names this side asked for. */
  readonly filter: NameFilter
  readonly options: SessionOptions
  /** Who the remote is, what it may read. */
  readonly admission: Admission
  /** Which answers the remote takes (records). */
  readonly extensions: ExtensionUse
  readonly stats: SessionStats
  readonly antiEntropy: AntiEntropy
  /** An answer to a VERSIONS that waited for the rate is queued behind the messages being handled. */
  readonly intake: Intake
  readonly now: () => number
  /** When the session started (the request gate's rate counts from then). */
  readonly startedAt: number
  /** The session, the origin of the commits it applies (see `Reconciler`). */
  readonly origin: object
  /** Whether the session is open and not closing (waiting requests are served only then). */
  open(): boolean
  /** Whether the session is neither closed nor closing. */
  active(): boolean
  /** Whether the session is closed. */
  closed(): boolean
  /** Sends a control frame unless closed. */
  sendControl(message: Message): void
  refuse(reason: RefuseReason, message: string): void
  malformed(why: string): void
  close(reason: string): void
  /** Both sides accepted (see {@link SessionOpening.ready}): the session opens, if it is still in its handshake. */
  maybeOpen(): void
}

/** @internal a session's opening and the requests it serves (see the module comment). */
export class SessionOpening {
  /** Versions and credentials of both sides. */
  readonly handshake: Handshake
  /** The remote's byte window, once its HELLO was accepted. */
  private windowBytes: number | undefined
  /** Range-based reconciliation, once both HELLOs announced it. */
  private reconciliation: Reconciler | undefined
  /** The remote sent what may not come before the handshake: it is refused, never opened. */
  private violated = false
  private readonly requests: RequestGate
  /** How the request gate answers: our VERSIONS, or an answer queued behind the messages being handled. */
  private readonly requestServer: RequestServer

  constructor(private readonly context: SessionOpeningContext) {
    const { options } = context
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
    this.requests = new RequestGate(options.requestRate ?? DEFAULT_REQUEST_RATE, context.startedAt)
    this.requestServer = {
      stats: context.stats,
      building: () => context.antiEntropy.building,
      sendVersions: () => context.antiEntropy.sendVersions(),
      answer: (entries) => context.intake.enqueue(() => this.answer(entries)),
    }
  }

  /** The remote's byte window, once its HELLO was accepted. */
  get remoteWindowBytes(): number | undefined {
    return this.windowBytes
  }

  /** Range-based reconciliation, once both HELLOs announced it. */
  get reconciler(): Reconciler | undefined {
    return this.reconciliation
  }

  /** Whether the handshake is complete on both sides and the remote sent nothing that may not come before it. */
  get ready(): boolean {
    return this.handshake.complete && !this.violated
  }

  /** The remote sent what may not come before the handshake: nothing more of the handshake goes out, and the session never opens. */
  violation(): void {
    this.violated = true
  }

  /** A HELLO or AUTH of the remote, to the handshake. */
  receive(message: Parameters<Handshake['receive']>[0]): Promise<void> {
    return this.handshake.receive(message, this.handshakeIo)
  }

  /** The remote's HELLO-OK: the session may open. */
  helloOk(): void {
    if (!this.handshake.helloOk()) {
      this.context.stats.unexpected++
      return
    }
    this.context.maybeOpen()
  }

  /** The handshake answers (AUTH, HELLO-OK or REFUSE) through this. */
  private readonly handshakeIo: HandshakeIo = {
    send: (message) => {
      if (!this.violated) this.context.sendControl(message)
    },
    refuse: (reason, message) => this.context.refuse(reason, message),
    authenticate: (peer, presented) => this.context.admission.authenticate(peer, presented),
    active: () => this.context.active(),
    unexpected: () => {
      this.context.stats.unexpected++
    },
    accepted: () => {
      const remote = this.handshake.remote!
      this.windowBytes = windowBytesOf(remote)
      if (this.context.options.reconcile !== false && takesReconcile(remote)) this.reconciliation = this.newReconciler()
      this.context.maybeOpen()
    },
  }

  private newReconciler(): Reconciler {
    const { context } = this
    return new Reconciler({
      host: context.host,
      filter: context.filter,
      remoteFilter: () => this.handshake.remote!.filter,
      mayRead: (name) => context.admission.mayRead(this.handshake.remote?.agentId, name),
      send: (message) => context.sendControl(message),
      answer: (names, entries) => this.answer(entries, names),
      fallback: () => context.antiEntropy.sendVersions({ full: true }),
      fail: (reason) => context.close(reason),
      admit: () => this.requests.reconciliation(context.now()),
      dropped: () => {
        context.stats.deferredRequests++
      },
      mutual: () => sameFilter(context.filter, this.handshake.remote!.filter),
      dialer: context.options.direction !== 'inbound',
      fromRemote: (origin) => origin === context.origin,
    })
  }

  // ---- the remote's requests, once open ------------------------------------

  /** Serves the expensive requests that waited for the rate, if any (once open); `now`: else the session's clock. */
  serveWaiting(now?: number): void {
    if (!this.requests.waiting) return
    const at = now ?? this.context.now()
    if (this.context.open()) this.requests.serve(at, this.requestServer)
  }

  /** Whether the remote's VERSIONS is to be answered now ({@link answer}); else the gate answers it once the rate lets it. */
  admitVersions(entries: readonly VersionEntry[]): boolean {
    return this.requests.onVersions(entries, this.context.now(), this.requestServer)
  }

  /** The remote's REQUEST: our VERSIONS, now or once the rate lets it. */
  onRequest(): void {
    this.requests.onRequest(this.context.now(), this.requestServer)
  }

  /** Answers the remote's VERSIONS, or its WANT (`only`: the names it covers). */
  async answer(entries: readonly VersionEntry[], only?: HostedName[]): Promise<void> {
    const { context } = this
    const remote = this.handshake.remote!
    await context.antiEntropy.answer(
      entries,
      {
        filter: remote.filter,
        mayRead: (name) => context.admission.mayRead(remote.agentId, name),
        host: context.host,
        malformed: (why) => context.malformed(why),
        records: context.extensions.answerRecordsFor(remote),
        answered: (records, merged) => {
          context.stats.answerRecords += records
          context.stats.answerMerged += merged
        },
      },
      () => context.closed(),
      only,
    )
  }
}
