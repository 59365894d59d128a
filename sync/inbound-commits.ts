/**
 * The remote's commits on one session, once the receive queue hands them
 * over: each admitted (sync/admission.ts) with the PROVENANCE that came
 * before it, recorded in the ledger (sync/inbound.ts) once durable or
 * refused (a refusal answered with REJECT), and acknowledged by cumulative
 * ACKs: one for the commits one write made durable (a microtask after they
 * settle), or, with `ackDelayMs`, one per delay (sent with the commit that
 * settles after it, with this side's next commit, or by the timer).
 */
import type { Emitter } from '../crdt/emitter.ts'
import { ErrorCodes } from '../crdt/errors.ts'
import type { Admission } from './admission.ts'
import type { AntiEntropy } from './anti-entropy.ts'
import type { ExtensionUse } from './extension-use.ts'
import type { InboundLedger } from './inbound.ts'
import type { DecodedMessage, DeltaEntry, HelloMessage, Message, ProvenanceMessage } from './messages.ts'
import type { SessionEvents, SessionOptions, SessionStats } from './session-types.ts'

/** A remote commit as the receive queue hands it over: its seq, its entries and the PROVENANCE that came with it. */
export interface QueuedCommit {
  readonly seq: number
  readonly entries: readonly DeltaEntry[]
  readonly provenance?: ProvenanceMessage | undefined
}

/** What {@link InboundCommits} needs of its session. */
export interface InboundCommitsContext {
  readonly stats: SessionStats
  readonly ledger: InboundLedger
  readonly admission: Admission
  /** Asked for a resync when a commit comes after a gap; told of a DONE. */
  readonly antiEntropy: AntiEntropy
  readonly extensions: ExtensionUse
  /** The session's events (`refused-write`). */
  readonly events: Emitter<SessionEvents>
  /** `ackDelayMs` and `setTimer`: the ACK coalescing. */
  readonly options: SessionOptions
  readonly now: () => number
  /** The remote's HELLO, once accepted. */
  readonly handshake: { readonly remote: HelloMessage | undefined }
  /** The origin of the commits applied (the session: they are not sent back to it). */
  readonly origin: object
  /** Whether the session is closed. */
  closed(): boolean
  /** Sends a control frame (ACK, REJECT) unless closed. */
  sendControl(message: Message): void
  /** Counts a malformed frame (refusing the remote after too many). */
  malformed(why: string): void
  /** Ends the session. */
  close(reason: string): void
}

/** @internal the remote's commits on one session (see the module comment). */
export class InboundCommits {
  /** The PROVENANCE of the remote's next commit, until it comes. */
  private pendingProvenance: ProvenanceMessage | undefined
  /** Commits handled and not yet settled (durable, refused or failed). */
  private readonly settling = new Set<Promise<void>>()
  /** An ACK check is queued (see {@link settleCommit}). */
  private ackQueued = false
  /** A coalesced ACK is due within `ackDelayMs` of `since` (see {@link settleCommit}); `cancel` stops its timer. */
  private ackDeferred: { readonly since: number; readonly cancel: () => void } | undefined

  constructor(private readonly context: InboundCommitsContext) {}

  /** Whether a commit handled is not settled yet. */
  get unsettled(): boolean {
    return this.settling.size > 0
  }

  /** Keeps the remote's PROVENANCE for its next commit. */
  provenance(message: ProvenanceMessage): void {
    this.pendingProvenance = message
  }

  /**
   * Handles a remote commit: the next message is taken as soon as this one
   * is applied and its write queued (the host's `applied`), or once it
   * settled (a host that cannot tell, a refusal); it is acknowledged only
   * once durable, in order (ACK is cumulative over what is durable).
   */
  async onCommit(seq: number, entries: readonly DeltaEntry[], independent = false): Promise<void | { readonly settled: Promise<void> }> {
    const provenance = this.pendingProvenance?.seq === seq ? this.pendingProvenance : undefined
    this.pendingProvenance = undefined
    if (!this.begin(seq)) return
    return this.track((applied) => this.settleCommit(seq, entries, applied, provenance, independent))
  }

  /**
   * Counts a commit and opens it in the ledger: false for a duplicate
   * (acknowledged again, not applied); a gap asks the remote for a resync.
   */
  private begin(seq: number): boolean {
    const { context } = this
    context.stats.commitsIn++
    if (context.ledger.isDuplicate(seq)) {
      context.stats.duplicates++
      this.maybeAck(true)
      return false
    }
    if (context.ledger.isGap(seq)) {
      context.stats.gaps++
      if (!context.antiEntropy.pending) context.antiEntropy.sendVersions()
    }
    context.ledger.begin(seq)
    return true
  }

  /**
   * Runs `settle` (given the host's `applied`) among the commits settling,
   * and resolves once applied (with the settling promise) or once settled.
   */
  private async track(settle: (applied: () => void) => Promise<void>): Promise<void | { readonly settled: Promise<void> }> {
    let onApplied!: () => void
    const applied = new Promise<'applied'>((resolve) => {
      onApplied = () => resolve('applied')
    })
    const settled = settle(onApplied)
    this.settling.add(settled)
    void settled.then(() => {
      this.settling.delete(settled)
    })
    if ((await Promise.race([applied, settled.then(() => 'settled' as const)])) === 'settled') return
    return { settled }
  }

  /** Resolves once every commit handled so far has settled. */
  async allSettled(): Promise<void> {
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
    const { context } = this
    try {
      const remote = context.handshake.remote!
      const signable = context.extensions.signable(remote)
      const admitted = await context.admission.admit(remote.agentId, entries, context.origin, applied, provenance, signable, independent)
      if ('refused' in admitted && !context.closed()) {
        const { name, code, message } = admitted.refused
        if (code === ErrorCodes.DECODE_ERROR) context.malformed(`undecodable delta for "${name}"`)
        this.refuseWrite(seq, name, code, message)
      }
    } catch (error) {
      this.applyFailed(error)
      return
    }
    this.recorded([seq])
  }

  /** A commit's apply failed (not persisted: a storage failure): nothing is acknowledged, the session closes and the remote resyncs on reconnect. */
  private applyFailed(error: unknown): void {
    if (this.context.closed()) return
    this.context.close(`could not apply a remote commit: ${(error as Error)?.message ?? String(error)}`)
  }

  /** Commits recorded (durable or refused): marked received, and acknowledged. */
  private recorded(seqs: Iterable<number>): void {
    if (this.context.closed()) return
    for (const seq of seqs) this.context.ledger.markReceived(seq)
    this.acknowledge()
  }

  /**
   * Handles commits that queued up behind the one handled before them, in
   * order, as one unit when the host can (`Admission.admitGroup`: each
   * logged under its own provenance), else one by one as {@link onCommit}
   * does; resolves as {@link onCommit} (once applied, or settled).
   */
  async onCommits(commits: readonly QueuedCommit[]): Promise<void | { readonly settled: Promise<void> }> {
    // A PROVENANCE handled before the group is the first commit's, as onCommit takes it.
    const pending = this.pendingProvenance
    this.pendingProvenance = undefined
    const taken: QueuedCommit[] = []
    for (const [i, given] of commits.entries()) {
      const commit = i === 0 && given.provenance === undefined && pending?.seq === given.seq ? { ...given, provenance: pending } : given
      if (this.begin(commit.seq)) taken.push(commit)
    }
    if (taken.length === 0) return
    return this.track((applied) => this.settleCommits(taken, applied))
  }

  /**
   * The DELTAs (each after its PROVENANCE, if any) that queued up together
   * (sync/intake.ts), handed over as {@link onCommits}; a PROVENANCE left
   * last is kept for the commit still to come.
   */
  onGroup(messages: readonly DecodedMessage[]): Promise<void | { readonly settled: Promise<void> }> {
    const commits: QueuedCommit[] = []
    let provenance: ProvenanceMessage | undefined
    for (const message of messages) {
      if (message.type === 'provenance') {
        if (!this.context.extensions.provenance) this.context.stats.unexpected++
        else provenance = message
      } else if (message.type === 'delta') {
        commits.push({ seq: message.seq, entries: [message.entry], ...(provenance?.seq === message.seq ? { provenance } : {}) })
        provenance = undefined
      }
    }
    const handled = this.onCommits(commits)
    // Set once the group took what was pending (onCommits reads it synchronously).
    if (provenance) this.provenance(provenance)
    return handled
  }

  /** Admits commits as one unit or, if that is refused (nothing applied), one by one; records and acknowledges them. Never rejects. */
  private async settleCommits(commits: readonly QueuedCommit[], applied: () => void): Promise<void> {
    const { context } = this
    let admitted: { readonly changed: readonly string[] } | undefined
    try {
      const remote = context.handshake.remote!
      admitted = await context.admission.admitGroup(remote.agentId, commits, context.origin, applied, context.extensions.signable(remote))
    } catch (error) {
      this.applyFailed(error)
      return
    }
    if (admitted === undefined) {
      // One of them is refused (or the host has no group path): each alone, in order, as if it had come alone.
      const settles: Promise<void>[] = []
      for (const { seq, entries, provenance } of commits) {
        if (context.closed()) break
        let taken!: () => void
        const next = new Promise<void>((resolve) => {
          taken = resolve
        })
        // The next one once this one is applied (its write queued) or settled, as the receive queue would take it.
        const settled = this.settleCommit(seq, entries, taken, provenance, false)
        settles.push(settled)
        await Promise.race([next, settled])
      }
      applied()
      await Promise.all(settles)
      return
    }
    this.recorded(commits.map((commit) => commit.seq))
  }

  /** A commit was recorded (durable or refused): its ACK goes out now, or coalesced (see the module comment). */
  private acknowledge(): void {
    const { context } = this
    const { ackDelayMs = 0, setTimer } = context.options
    if (ackDelayMs > 0 && setTimer !== undefined) {
      // Coalesced: the commits that settle within ackDelayMs get one ACK, sent with the commit that settles
      // after it (no wakeup of its own while commits keep coming), with our next commit, or by the timer.
      const now = context.now()
      if (this.ackDeferred === undefined) {
        this.ackDeferred = { since: now, cancel: setTimer(() => this.deferredAck(), ackDelayMs) }
        if (context.ledger.ackBacklog < context.ledger.ackEvery) return
      } else if (now - this.ackDeferred.since < ackDelayMs && context.ledger.ackBacklog < context.ledger.ackEvery) return
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

  /** Sends a coalesced ACK that is due, now: with this side's next commit (in the same socket write, on a transport that corks a turn's frames). */
  flushDeferredAck(): void {
    if (this.ackDeferred !== undefined) this.deferredAck()
  }

  /** Stops the timer of a coalesced ACK (the session ended). */
  cancelDeferredAck(): void {
    this.ackDeferred?.cancel()
    this.ackDeferred = undefined
  }

  /** Sends the coalesced ACK now (if the receive queue lets it, see {@link InboundLedger.nextAck}). */
  private deferredAck(): void {
    this.ackDeferred?.cancel()
    this.ackDeferred = undefined
    this.maybeAck(false)
  }

  private refuseWrite(seq: number, name: string, code: string, message: string): void {
    const { context } = this
    context.stats.refusedWrites++
    context.events.emit('refused-write', { name, code, message })
    context.sendControl({ type: 'reject', seq, name, code, message })
  }

  /**
   * A DONE of the remote, once the commits before it settled: everything
   * the remote had up to its commit `seq` is now applied here, and
   * acknowledged. Returns whether it ends the first resync (the session
   * is synced).
   */
  onDone(seq: number): boolean {
    // Everything the remote had up to its commit `seq` is now applied here.
    this.context.ledger.cover(seq)
    const first = this.context.antiEntropy.done()
    this.maybeAck(true)
    return first
  }

  /** Sends the ACK due (always when `force`d: a duplicate, a DONE), if any. */
  private maybeAck(force: boolean): void {
    const seq = this.context.ledger.nextAck(force)
    if (seq !== undefined) this.context.sendControl({ type: 'ack', seq })
  }
}
