/**
 * The remote's word on the commits this side sent: an ACK moves the
 * window (its waiters released, the pump run again), a repeat of one (a
 * keepalive) shows the remote is still taking what was sent; a REJECT is
 * counted and reported, and an answer bundle whose records the remote
 * refuses goes again without them. Once the session is open both are
 * handled as they arrive, ahead of the inbox.
 */
import type { Emitter } from '../crdt/emitter.ts'
import type { AntiEntropy } from './anti-entropy.ts'
import type { Liveness } from './liveness.ts'
import type { DecodedMessage } from './messages.ts'
import type { Outbox } from './outbound.ts'
import type { SessionEvents, SessionStats } from './session-types.ts'

/** What {@link RemoteAcks} needs of its session. */
export interface RemoteAcksContext {
  readonly stats: SessionStats
  /** The session's events (`ack`, `rejected`). */
  readonly events: Emitter<SessionEvents>
  readonly outbox: Outbox
  /** Told of an answer's records the remote refused. */
  readonly antiEntropy: AntiEntropy
  /** Told of acknowledgements that moved. */
  readonly liveness: Liveness
  readonly now: () => number
  /** Whether the session is open and not closing. */
  open(): boolean
}

/** @internal the remote's ACK and REJECT of what this side sent (see the module comment). */
export class RemoteAcks {
  constructor(private readonly context: RemoteAcksContext) {}

  /**
   * ACK and REJECT of the commits this side sent are handled as they
   * arrive, ahead of the inbox (in their order): they are about what this
   * side sent, not ordered with what the remote sends, and behind a
   * handler that computes an answer (RANGES, VERSIONS) they would keep the
   * window shut until it ends: the streamed part of a first sync stalled
   * with the remote idle (100,000 names: 2.5 s of 11). Before the session is
   * open they are queued (and counted unexpected) as before.
   */
  ahead(message: DecodedMessage): boolean {
    if (!this.context.open()) return false
    if (message.type === 'ack') this.onAck(message.seq)
    else if (message.type === 'reject') this.onReject(message)
    else return false
    return true
  }

  /** The remote's REJECT of one of our commits. */
  onReject(message: Extract<DecodedMessage, { type: 'reject' }>): void {
    const { context } = this
    context.stats.rejectedByRemote++
    context.events.emit('rejected', { seq: message.seq, name: message.name, code: message.code, message: message.message })
    if (context.outbox.bundleRejected(message.seq, message.name) === 'records') context.antiEntropy.recordsRefused(message.name)
  }

  /** The remote's ACK of our commits up to `seq`. */
  onAck(seq: number): void {
    const { context } = this
    const { outbox } = context
    const result = outbox.acknowledge(seq, context.now)
    if (result === 'unexpected') {
      context.stats.unexpected++
      return
    }
    if (result === 'stale') {
      // A repeat (a keepalive): the remote is still taking what we sent; acknowledgements have not stalled.
      outbox.lastAckProgressAt = context.now()
      return
    }
    context.liveness.acked()
    context.events.emit('ack', { seq })
    outbox.releaseWaiters(seq)
    outbox.pump()
  }
}
