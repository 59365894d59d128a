/**
 * The inbound side of a sync session: decoding frames (reassembling
 * chunks) and the ledger of remote sequence numbers (duplicates, gaps, what
 * DONE covers, when to acknowledge). The session admits commits in order
 * through its inbox (the checks are sync/admission.ts's).
 */
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { Reassembler } from './chunking.ts'
import { decodeMessage, type DecodedMessage } from './messages.ts'
import type { SessionStats } from './session-types.ts'

/**
 * Decodes one frame; a CHUNK goes to `reassembler` and yields the whole
 * message once complete (`undefined` until then), with the bytes it took.
 * Throws on bad bytes (`CONCORD_LIMIT_EXCEEDED` over the reassembly budget).
 */
export function readFrame(
  frame: Uint8Array,
  reassembler: Reassembler,
  stats: SessionStats,
): { readonly message: DecodedMessage; readonly bytes: number } | undefined {
  const message = decodeMessage(frame)
  if (message.type !== 'chunk') return { message, bytes: frame.length }
  stats.chunksIn++
  const whole = reassembler.add(message)
  if (!whole) return undefined
  const inner = decodeMessage(whole)
  if (inner.type === 'chunk') throw new ConcordError(ErrorCodes.PROTOCOL_ERROR, 'a chunk inside a chunk')
  return { message: inner, bytes: whole.length }
}

/** The remote sequence numbers received, covered and acknowledged. */
export class InboundLedger {
  /** Remote commits received without a gap: 1..applied. */
  private applied = 0
  /** Remote commits received beyond a gap. */
  private readonly receivedAhead = new Set<number>()
  /** Remote commits covered by a DONE (an anti-entropy answer). */
  private covered = 0
  private lastAckSent = 0
  /** Remote commits handled (applied, their write queued) and not yet durable or refused. */
  private readonly pending = new Set<number>()
  /** Remote commits waiting in the inbox. */
  inboxCommits = 0

  constructor(
    /** Acknowledge at least every this many commits. */
    readonly ackEvery: number,
  ) {}

  /** Commits acknowledgeable and not yet acknowledged. */
  get ackBacklog(): number {
    return this.ackValue - this.lastAckSent
  }

  /** Whether commit `seq` was received before. */
  isDuplicate(seq: number): boolean {
    return seq <= this.applied || this.receivedAhead.has(seq) || this.pending.has(seq)
  }

  /** Records commit `seq` as handled, its outcome (durable or refused) to come with {@link markReceived}. */
  begin(seq: number): void {
    this.pending.add(seq)
  }

  /** Remote commits not acknowledged yet that this side holds: waiting in the inbox, or handled and not yet durable. */
  get unsettled(): number {
    return this.inboxCommits + this.pending.size
  }

  /** Whether a handled commit still waits for its outcome. */
  get settling(): boolean {
    return this.pending.size > 0
  }

  /**
   * Whether commits are missing before `seq`. A commit covered by a DONE may
   * still arrive late (reordering): it is applied (harmless if seen).
   */
  isGap(seq: number): boolean {
    return seq - 1 > Math.max(this.applied, this.covered) && !this.receivedAhead.has(seq - 1) && !this.pending.has(seq - 1)
  }

  /** Records commit `seq` as received (durable here, or refused). */
  markReceived(seq: number): void {
    this.pending.delete(seq)
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

  /** Records a DONE: everything the remote had up to its commit `seq` is now applied here. */
  cover(seq: number): void {
    if (seq > this.covered) this.covered = seq
  }

  /** What we acknowledge: every remote commit up to it is applied here or covered by a DONE. */
  get ackValue(): number {
    return Math.max(this.applied, this.covered)
  }

  /** The last ACK sent (0: none yet); a keepalive repeats it. */
  get lastAck(): number {
    return this.lastAckSent
  }

  /**
   * The ACK due now, if any (recorded as sent): always when `force`d,
   * otherwise on progress once the inbox is empty or every `ackEvery` commits.
   */
  nextAck(force: boolean): number | undefined {
    const value = this.ackValue
    if (value <= this.lastAckSent && !force) return undefined
    if (force || this.inboxCommits === 0 || value - this.lastAckSent >= this.ackEvery) {
      this.lastAckSent = value
      return value
    }
    return undefined
  }
}
