/**
 * The inbound side of a sync session: decoding frames (reassembling
 * chunks), checking a remote commit before it is applied, and the ledger of
 * remote sequence numbers (duplicates, gaps, what DONE covers, when to
 * acknowledge). The session applies commits in order through its inbox.
 */
import { ConcordError, ErrorCodes, typeMismatchMessage } from '../crdt/errors.ts'
import type { Reassembler } from './chunking.ts'
import type { Access, SyncHost } from './host.ts'
import { decodeMessage, type DecodedMessage, type DeltaEntry, type PeerId } from './messages.ts'
import { matchesFilter, type NameFilter } from './names.ts'
import type { SessionStats } from './session-types.ts'

/**
 * Decodes one frame; a CHUNK goes to `reassembler` and yields the whole
 * message once complete (`undefined` until then). Throws on bad bytes.
 */
export function readFrame(frame: Uint8Array, reassembler: Reassembler, stats: SessionStats): DecodedMessage | undefined {
  let message = decodeMessage(frame)
  if (message.type === 'chunk') {
    stats.chunksIn++
    const whole = reassembler.add(message)
    if (!whole) return undefined
    message = decodeMessage(whole)
    if (message.type === 'chunk') throw new ConcordError(ErrorCodes.PROTOCOL_ERROR, 'a chunk inside a chunk')
  }
  return message
}

/** Why a remote commit is refused before it is applied. */
export interface WriteRefusal {
  readonly name: string
  readonly code: string
  readonly message: string
}

/** What {@link checkWrite} needs to know about this side. */
export interface WriteRules {
  /** The names this side asked for. */
  readonly filter: NameFilter
  /** The remote peer. */
  readonly peerId: PeerId
  /** What the remote may do with a name. */
  readonly access: (name: string) => Access
  readonly host: SyncHost
}

/**
 * Checks a remote commit before it is applied: each name in the requested
 * names, writable by the remote, of its local type, and of one type within
 * the commit. Returns the first refusal, or `undefined` if it may apply.
 */
export function checkWrite(entries: readonly DeltaEntry[], rules: WriteRules): WriteRefusal | undefined {
  // A name may come several times (a transaction that changed it twice: its deltas apply in order), always as one type.
  const seen = new Map<string, string>()
  for (const entry of entries) {
    const type = seen.get(entry.name)
    if (type !== undefined && type !== entry.replicaType) {
      return { name: entry.name, code: ErrorCodes.PROTOCOL_ERROR, message: `"${entry.name}" as two types in one commit` }
    }
    seen.set(entry.name, entry.replicaType)
    if (!matchesFilter(rules.filter, entry.name)) {
      return { name: entry.name, code: ErrorCodes.FORBIDDEN, message: `"${entry.name}" is outside the requested names` }
    }
    if (rules.access(entry.name) !== 'write') {
      return { name: entry.name, code: ErrorCodes.FORBIDDEN, message: `peer "${rules.peerId}" may not write "${entry.name}"` }
    }
    const local = rules.host.typeOf(entry.name)
    if (local !== undefined && local !== entry.replicaType) {
      return { name: entry.name, code: ErrorCodes.TYPE_MISMATCH, message: typeMismatchMessage(entry.name, entry.replicaType, local) }
    }
  }
  return undefined
}

/** Error codes of a remote commit that was refused (not applied) rather than failing to persist. */
export function isRefusedApply(code: string | undefined): boolean {
  return code === ErrorCodes.DECODE_ERROR || code === ErrorCodes.TYPE_MISMATCH || code === ErrorCodes.FORBIDDEN || code === ErrorCodes.INVALID_ARGUMENT
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
  /** Remote commits waiting in the inbox. */
  inboxCommits = 0

  constructor(
    /** Acknowledge at least every this many commits. */
    private readonly ackEvery: number,
  ) {}

  /** Whether commit `seq` was received before. */
  isDuplicate(seq: number): boolean {
    return seq <= this.applied || this.receivedAhead.has(seq)
  }

  /**
   * Whether commits are missing before `seq`. A commit covered by a DONE may
   * still arrive late (reordering): it is applied (harmless if seen).
   */
  isGap(seq: number): boolean {
    return seq - 1 > Math.max(this.applied, this.covered) && !this.receivedAhead.has(seq - 1)
  }

  /** Records commit `seq` as received (applied or refused). */
  markReceived(seq: number): void {
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
