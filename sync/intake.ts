/**
 * The intake of a sync session: everything between a frame arriving and its
 * message being handled, in order, within budgets (see sync/PROTOCOL.md,
 * "Flow control and limits"):
 * - before the remote HELLO is accepted, only one bounded HELLO (and small
 *   HELLO-OK or REFUSE frames) gets past the {@link PreHandshakeGate};
 * - the inbound rate limit, if any, holds frames back ({@link InboundRateGate});
 * - a frame over the frame limit is malformed; chunks are reassembled within
 *   the reassembly budget;
 * - the receive queue (the inbox: messages waiting to be handled, and the one
 *   being handled) is bounded in commits (`2 x window + 64`) and in bytes
 *   (`maxInboxBytes`). Over a budget the remote is refused with `limit`.
 */
import { ErrorCodes, isConcordError } from '../crdt/errors.ts'
import { Reassembler } from './chunking.ts'
import { readFrame, type InboundLedger } from './inbound.ts'
import type { DecodedMessage, RefuseReason } from './messages.ts'
import { DEFAULT_MAX_HELLO_BYTES, PreHandshakeGate, type PreHandshakeRefusal } from './pre-handshake.ts'
import { InboundRateGate, type RateLimit } from './rate-gate.ts'
import type { SessionOptions, SessionStats } from './session-types.ts'

/** Limits of an {@link Intake}. */
export interface IntakeLimits {
  readonly maxFrameBytes: number
  readonly maxMessageBytes: number
  readonly maxReassemblyBytes?: number | undefined
  readonly maxInboxBytes: number
  readonly maxHelloBytes: number
  /** The window this side announced (commits in flight). */
  readonly window: number
  readonly rateLimit?: RateLimit | undefined
}

/** The limits of a session's intake, from its options (defaults in sync/session-types.ts). */
export function intakeLimits(options: SessionOptions, maxFrameBytes: number, window: number): IntakeLimits {
  const maxMessageBytes = options.maxMessageBytes ?? 64 * 1024 * 1024
  return {
    maxFrameBytes,
    maxMessageBytes,
    maxReassemblyBytes: options.maxReassemblyBytes,
    maxInboxBytes: options.maxInboxBytes ?? 2 * maxMessageBytes,
    maxHelloBytes: options.maxHelloBytes ?? DEFAULT_MAX_HELLO_BYTES,
    window,
    rateLimit: options.rateLimit,
  }
}

/** What an {@link Intake} needs of its session. */
export interface IntakeContext {
  readonly stats: SessionStats
  readonly ledger: InboundLedger
  readonly now: () => number
  /** Whether the remote HELLO was accepted. */
  readonly remoteAccepted: () => boolean
  /** Whether the session still takes frames (not closed or closing). */
  readonly active: () => boolean
  readonly refuse: (reason: RefuseReason, message: string) => void
  /**
   * A frame that may not come before the handshake: every later frame is
   * dropped undecoded; the session refuses the remote once the handshake
   * step under way (a credential check) is done.
   */
  readonly violation: (refusal: PreHandshakeRefusal) => void
  readonly malformed: (why: string) => void
  /**
   * Handles one message, in order (the inbox awaits it). A commit handled
   * once applied, while it is still being written, resolves with `settled`:
   * its bytes stay counted in the inbox budget until that settles.
   */
  readonly handle: (message: DecodedMessage) => Promise<void | { readonly settled: Promise<void> }>
  /**
   * Handles, in order, the DELTA commits (each after its PROVENANCE, if any)
   * that queued up while a message before them was handled, two to
   * {@link MAX_GROUP_COMMITS}; resolves as {@link handle}. Without it (and
   * for a group of one commit), each message is handled alone.
   */
  readonly handleGroup?: ((messages: readonly DecodedMessage[]) => Promise<void | { readonly settled: Promise<void> }>) | undefined
  /** Handles a REFUSE at once, ahead of the inbox. */
  readonly handleNow: (message: DecodedMessage) => void
  /** Handles `message` at once, ahead of the inbox, if the session takes it so (true), else it is queued. */
  readonly handleAhead?: ((message: DecodedMessage) => boolean) | undefined
  /** Ends the session after a handler threw. */
  readonly fail: (reason: string) => void
  /** A frame of the remote passed the gates and decoded: the type of its message, or `chunk` for a part of one still arriving. */
  readonly arrived?: ((kind: DecodedMessage['type']) => void) | undefined
}

/** Most commits handed to the session's `handleGroup` at once. */
export const MAX_GROUP_COMMITS = 64

/** Messages waiting behind the message being handled, to be handled together (see {@link IntakeContext.handleGroup}). */
interface QueuedGroup {
  readonly messages: DecodedMessage[]
  bytes: number
  commits: number
  started: boolean
}

/** Frames in, messages out to the session's handler, in order, within budgets. */
export class Intake {
  private readonly reassembler: Reassembler
  private readonly rateGate: InboundRateGate | undefined
  private readonly gate: PreHandshakeGate
  private inbox: Promise<void> = Promise.resolve()
  private inboxBytes = 0
  private violated = false
  /** The group the next DELTA or PROVENANCE joins, while it waits in the inbox. */
  private group: QueuedGroup | undefined

  constructor(
    private readonly limits: IntakeLimits,
    private readonly context: IntakeContext,
    startedAt: number,
  ) {
    this.reassembler = new Reassembler({ maxMessageBytes: limits.maxMessageBytes, maxPartial: 4, maxBufferedBytes: limits.maxReassemblyBytes })
    this.rateGate = limits.rateLimit ? new InboundRateGate(limits.rateLimit, startedAt) : undefined
    this.gate = new PreHandshakeGate(limits.maxHelloBytes)
  }

  /** The byte window to announce: an eighth of the receive-queue budget (see sync/extensions.ts). */
  get windowBytes(): number {
    return Math.max(1, Math.floor(this.limits.maxInboxBytes / 8))
  }

  /** Bytes of messages waiting in the inbox (and the one being handled; a commit's until it is written). */
  get queuedBytes(): number {
    return this.inboxBytes
  }

  /** Memory held by partial (chunked) messages. */
  get reassemblyBytes(): number {
    return this.reassembler.heldBytes
  }

  /** Takes one frame from the remote. */
  receive(frame: Uint8Array): void {
    const { stats } = this.context
    if (this.violated) return
    if (!this.context.remoteAccepted()) {
      const refusal = this.gate.screen(frame)
      if (refusal) {
        this.violated = true
        stats.handshakeViolations++
        if (refusal.reason === 'protocol') stats.unexpected++
        this.context.violation(refusal)
        return
      }
    }
    if (this.rateGate) {
      this.drain(this.context.now())
      if (!this.rateGate.admit(frame, this.context.now())) {
        stats.deferred++
        if (this.rateGate.overLimit) {
          this.context.refuse('limit', `over the inbound rate limit of ${this.rateGate.ratePerSecond} bytes/s (${this.rateGate.deferredBytes} bytes waiting)`)
        }
        return
      }
    }
    this.process(frame)
  }

  /** Processes frames that waited for the rate limit, as far as the bucket allows. */
  drain(now: number): void {
    this.rateGate?.drain(now, this.context.active, (frame) => this.process(frame))
  }

  /** Queues `job` behind the messages already in the inbox. */
  enqueue(job: () => Promise<void>): void {
    this.inbox = this.inbox.then(async () => {
      if (!this.context.active()) return
      try {
        await job()
      } catch (error) {
        this.context.fail(`internal error: ${(error as Error)?.message ?? String(error)}`)
      }
    })
  }

  /** Drops partial messages (the session ended). */
  clear(): void {
    this.reassembler.clear()
  }

  /** Queues `group` behind the messages in the inbox; DELTAs and PROVENANCEs join it until it starts. */
  private queueGroup(group: QueuedGroup): void {
    this.group = group
    const { ledger } = this.context
    this.inbox = this.inbox.then(() => {
      group.started = true
      if (this.group === group) this.group = undefined
      ledger.inboxCommits -= group.commits
      return this.runJob(group.bytes, async () => {
        if (group.commits >= 2) return this.context.handleGroup!(group.messages)
        // At most one commit (a PROVENANCE and its DELTA, at light load): each message as if queued alone.
        let settled: Promise<void> | undefined
        for (const message of group.messages) {
          if (!this.context.active()) break
          settled = (await this.context.handle(message))?.settled ?? settled
        }
        return settled && { settled }
      })
    })
  }

  /**
   * One inbox job: `work` handles its messages (not once the session is no
   * longer active), resolving as {@link IntakeContext.handle}: with what
   * they started that settles later (a commit being written), their `bytes`
   * leave the inbox budget then, else at once. A throw fails the session.
   */
  private async runJob(bytes: number, work: () => Promise<void | { readonly settled: Promise<void> }>): Promise<void> {
    let settled: Promise<void> | undefined
    try {
      if (!this.context.active()) return
      settled = (await work())?.settled
    } catch (error) {
      this.context.fail(`internal error: ${(error as Error)?.message ?? String(error)}`)
    } finally {
      if (settled === undefined) this.inboxBytes -= bytes
      else
        void settled.finally(() => {
          this.inboxBytes -= bytes
        })
    }
  }

  /** Decodes one frame (reassembling chunks) and queues it for handling, in order. */
  private process(frame: Uint8Array): void {
    if (frame.length > this.limits.maxFrameBytes) {
      this.context.malformed(`frame of ${frame.length} bytes over the limit of ${this.limits.maxFrameBytes}`)
      return
    }
    let read: ReturnType<typeof readFrame>
    try {
      read = readFrame(frame, this.reassembler, this.context.stats)
    } catch (error) {
      if (isConcordError(error, ErrorCodes.LIMIT_EXCEEDED)) this.context.refuse('limit', (error as Error).message)
      else this.context.malformed((error as Error).message)
      return
    }
    if (!read) {
      this.context.arrived?.('chunk') // a part of a message still arriving
      return
    }
    const { message, bytes } = read
    this.context.arrived?.(message.type)
    if (message.type === 'refuse') {
      // Handled at once, not behind the inbox: the remote closes right after
      // sending it, and a transport may report that close before the inbox
      // gets to the frame (the refusal would then look like a dropped link).
      this.context.handleNow(message)
      return
    }
    if (this.context.handleAhead?.(message)) return
    const { ledger } = this.context
    const isCommit = message.type === 'delta' || message.type === 'transaction'
    if (isCommit) {
      ledger.inboxCommits++
      // Commits applied and still being written count too: a sender that ignores the window is refused all the same.
      if (ledger.unsettled > 2 * this.limits.window + 64) {
        this.context.refuse('limit', `more than ${2 * this.limits.window + 64} unacknowledged commits queued (window ${this.limits.window})`)
        return
      }
    }
    this.inboxBytes += bytes
    if (this.inboxBytes > this.limits.maxInboxBytes) {
      this.context.refuse('limit', `more than ${this.limits.maxInboxBytes} bytes of messages queued (${this.inboxBytes})`)
      return
    }
    if (this.context.handleGroup !== undefined && (message.type === 'delta' || message.type === 'provenance')) {
      const group = this.group
      if (group !== undefined && !group.started && group.commits < MAX_GROUP_COMMITS) {
        group.messages.push(message)
        group.bytes += bytes
        if (isCommit) group.commits++
        return
      }
      this.queueGroup({ messages: [message], bytes, commits: isCommit ? 1 : 0, started: false })
      return
    }
    // Anything else ends the group: what comes after it is handled after it.
    this.group = undefined
    this.inbox = this.inbox.then(() => {
      // The commit count is of commits waiting (acknowledgements go out once
      // none waits); the bytes include the message being handled, and a
      // commit's until it is written.
      if (isCommit) ledger.inboxCommits--
      return this.runJob(bytes, () => this.context.handle(message))
    })
  }
}
