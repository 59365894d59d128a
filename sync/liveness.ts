/**
 * What keeps an open session moving over time, driven by
 * `SyncSession.tick`: the progress of a resync (what of its answer
 * arrives or waits here) and its repeats when the answer stays silent, a
 * keepalive (a repeat of our last ACK) while the remote's messages are still
 * being handled here, a REQUEST when the acknowledgements of our commits
 * stall, and the periodic anti-entropy.
 */
import { type AntiEntropy, MAX_RESYNC_RETRIES } from './anti-entropy.ts'
import type { InboundLedger } from './inbound.ts'
import type { DecodedMessage, Message } from './messages.ts'
import type { Outbox } from './outbound.ts'
import type { SessionOptions, SessionStats } from './session-types.ts'

/** What {@link Liveness} needs of its session. */
export interface LivenessContext {
  readonly stats: SessionStats
  /** The last ACK sent (a keepalive repeats it). */
  readonly ledger: InboundLedger
  /** Whether the acknowledgements of our commits stalled. */
  readonly outbox: Outbox
  readonly antiEntropy: AntiEntropy
  /** `resyncTimeoutMs` and `antiEntropyIntervalMs`. */
  readonly options: SessionOptions
  readonly now: () => number
  /** Sends a control frame (ACK, REQUEST) unless closed. */
  sendControl(message: Message): void
  /** Ends the session (a resync that never got an answer). */
  close(reason: string): void
}

/** @internal the time-driven behaviour of an open session (see the module comment). */
export class Liveness {
  /** When a keepalive (a repeated ACK) last went out (see {@link tick}). */
  private keepaliveAt = Number.NEGATIVE_INFINITY
  /** Whether a chunk of the remote arrived since the last keepalive. */
  private chunksSinceKeepalive = false
  /** REQUESTs sent for stalled acknowledgements since the last that moved (see {@link tick}). */
  private stalledRequests = 0

  constructor(private readonly context: LivenessContext) {}

  /**
   * Repeats a resync that got no answer, asks for a resync when
   * acknowledgements stall, and runs the periodic anti-entropy; `busy`:
   * the remote's messages are still being handled here (an answer being
   * applied, a DONE behind it), which is not silence.
   */
  tick(now: number, busy: boolean): void {
    const { context } = this
    const resyncTimeout = context.options.resyncTimeoutMs ?? 5_000
    if (busy) context.antiEntropy.progress(now)
    // Busy: the remote is told so (a repeat of our last ACK, which a remote ignores as stale but takes as a sign of progress).
    if ((busy || this.chunksSinceKeepalive) && now - this.keepaliveAt >= resyncTimeout / 2) {
      this.keepaliveAt = now
      this.chunksSinceKeepalive = false
      context.stats.keepalivesOut++
      context.sendControl({ type: 'ack', seq: context.ledger.lastAck })
    }
    if (context.antiEntropy.resyncOverdue(now, resyncTimeout)) {
      if (context.antiEntropy.retries >= MAX_RESYNC_RETRIES) {
        context.close(`resync timeout: no answer after ${MAX_RESYNC_RETRIES + 1} tries`)
        return
      }
      context.stats.resyncRetries++
      context.antiEntropy.sendVersions({ retry: true })
    }
    // Stalled acknowledgements ask for a resync, again after twice the wait each time nothing moved.
    const { outbox } = context
    if (outbox.stalled && now - outbox.lastAckProgressAt >= resyncTimeout * 2 ** Math.min(this.stalledRequests, MAX_RESYNC_RETRIES)) {
      outbox.lastAckProgressAt = now
      this.stalledRequests++
      context.sendControl({ type: 'request' })
    }
    const interval = context.options.antiEntropyIntervalMs ?? 0
    if (context.antiEntropy.periodicDue(now, interval)) context.antiEntropy.sendVersions()
  }

  /**
   * A frame of the remote arrived. Parts of an answer to our resync (a
   * chunk, a commit, RANGES, WANT) and ACKs (the remote taking what we sent,
   * or saying it is still busy with it: a keepalive) mean the resync is
   * progressing: its timeout measures silence from here.
   */
  arrived(kind: DecodedMessage['type']): void {
    if (kind === 'chunk') this.chunksSinceKeepalive = true
    if (kind === 'chunk' || kind === 'delta' || kind === 'transaction' || kind === 'ranges' || kind === 'want' || kind === 'ack') {
      this.context.antiEntropy.progress(this.context.now())
    }
  }

  /** An ACK of the remote moved: acknowledgements have not stalled. */
  acked(): void {
    this.stalledRequests = 0
  }
}
