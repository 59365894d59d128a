/**
 * The outbound side of a sync session: control frames in order (a VERSIONS
 * slot waits for its contents), the data queue (commits, DONE, whenAcked
 * marks), sequence numbers and the remote's window, acknowledgements, answer
 * bundles kept for a resend, chunked sends, and the pump that writes frames
 * to the channel one at a time (backpressure).
 */
import { ConcordError, ErrorCodes } from '../crdt/errors.ts'
import type { EncodedProvenance } from '../crdt/provenance.ts'
import type { RecordSignature } from '../crdt/signature.ts'
import { MIN_FRAME_BYTES, splitIntoChunks } from './chunking.ts'
import { encodeMessage, type DeltaEntry, type HelloMessage, type Message } from './messages.ts'
import type { SessionStats, SyncChannel } from './session-types.ts'

/** The provenance of a commit as sent: with its entries' signatures, to a remote that takes them. */
export type OutgoingProvenance = EncodedProvenance & { readonly signatures?: ReadonlyArray<RecordSignature | undefined> | undefined }

/** Frame size assumed of a remote that did not say (and the default limit). */
export const DEFAULT_MAX_FRAME = 1024 * 1024

/** The bytes a commit takes on the wire, about (its deltas, names and headers). */
export function commitBytes(entries: readonly DeltaEntry[]): number {
  let bytes = 16
  for (const entry of entries) bytes += entry.delta.length + 3 * entry.name.length + 24
  return bytes
}

/** An item of the data queue: a commit to send, a DONE, or a whenAcked mark. */
export type DataItem =
  /** `answer`: part of an anti-entropy answer (see `ANSWER_BUNDLE_BYTES`). */
  | {
      readonly kind: 'commit'
      readonly entries: readonly DeltaEntry[]
      readonly answer?: boolean
      readonly provenance?: OutgoingProvenance | undefined
      /** Part of an answer made of records (sync/PROTOCOL.md "Answers made of records"). */
      readonly records?: boolean
      /** An answer's bundle of names that never shared a unit: sent as INDEPENDENT to a remote that takes it. */
      readonly independent?: boolean
    }
  | { readonly kind: 'done' }
  | { readonly kind: 'mark'; readonly resolve: () => void }

/** A control slot whose frame (VERSIONS) is still being built. */
export interface ControlSlot {
  frame?: Uint8Array
}

/** What an {@link Outbox} needs of its session. */
export interface OutboxContext {
  readonly channel: SyncChannel
  readonly stats: SessionStats
  /** This side's agent id (the author of a commit whose provenance names none). */
  readonly agentId: string
  /** Largest frame this side sends. */
  readonly maxFrameBytes: number
  /** Most queued commits before the queue is replaced by a resync. */
  readonly maxQueued: number
  /** The remote's HELLO, once accepted (its window and frame size). */
  readonly remote: () => HelloMessage | undefined
  /** The commit bytes the remote accepts in flight (its `window-bytes` HELLO extension), if it said. */
  readonly remoteWindowBytes: () => number | undefined
  /** Whether the remote takes INDEPENDENT bundles (it announced `independent`). */
  readonly remoteTakesIndependent: () => boolean
  /** Whether frames may still be sent (not closed or closing). */
  readonly active: () => boolean
  /** Ends the session (a send failed). */
  readonly fail: (reason: string) => void
}

/** The outgoing queues and sequence numbers of one session. */
export class Outbox {
  /** Control frames, in order; a VERSIONS slot waits for its (possibly async) contents. */
  private readonly control: Array<Uint8Array | ControlSlot> = []
  private data: DataItem[] = []
  /**
   * Bundles of an answer still being computed, sent while it is (see
   * {@link queueAnswerPart}): ahead of {@link data}, which waits for the
   * rest of the answer.
   */
  private parts: Array<Extract<DataItem, { kind: 'commit' }>> = []
  /** Number of `commit` items in {@link data} (kept so queueing stays O(1)). */
  private queued = 0
  /** Whether the remote's VERSIONS was answered and live commits flow (no resync pending). */
  live = false
  /** Answers being computed: data waits until they are queued, so nothing overtakes them. */
  private answering = 0
  private lastSeq = 0
  private acked = 0
  private windowBase = 0
  /** Commits sent beyond `max(acked, windowBase)`, oldest first, with their estimated bytes. */
  private readonly inflight: Array<{ readonly seq: number; readonly bytes: number }> = []
  private inflightBytes = 0
  /** When acknowledgements last moved (or the session opened). */
  lastAckProgressAt: number
  /** When the remote last acknowledged a new commit of ours (undefined: never). */
  lastAckAt: number | undefined
  private nextChunkId = 0
  private pumping = false
  private readonly waiters: Array<{ target: number; resolve: () => void }> = []
  /** Answer bundles of several names sent and not yet acknowledged, by seq (resent without a name the remote rejects). */
  private readonly bundles = new Map<
    number,
    {
      readonly entries: readonly DeltaEntry[]
      readonly provenance?: OutgoingProvenance | undefined
      readonly records?: boolean | undefined
      readonly independent?: boolean | undefined
    }
  >()
  /** Settles the pending {@link whenAcked} promises with an error. */
  private readonly rejecters = new Set<(error: Error) => void>()

  constructor(
    private readonly context: OutboxContext,
    now: number,
  ) {
    this.lastAckProgressAt = now
  }

  /** Highest of our commits the remote acknowledged. */
  get ackedSeq(): number {
    return this.acked
  }

  /** Highest sequence number given to one of our commits. */
  get sentSeq(): number {
    return this.lastSeq
  }

  /**
   * What the remote has not acknowledged yet: commits sent and not acked
   * plus those queued, and their estimated bytes on the wire
   * ({@link commitBytes}).
   */
  get lag(): { readonly commits: number; readonly bytes: number } {
    let bytes = this.inflightBytes
    for (const item of this.data) if (item.kind === 'commit') bytes += commitBytes(item.entries)
    for (const item of this.parts) bytes += commitBytes(item.entries)
    return { commits: Math.max(0, this.lastSeq - this.acked) + this.queued + this.parts.length, bytes }
  }

  /** Whether sending is stuck on acknowledgements (commits in flight, or queued behind a shut window). */
  get stalled(): boolean {
    return this.lastSeq > this.acked || ((this.queued > 0 || this.parts.length > 0) && !this.windowOpen(0))
  }

  /** Queues a control frame. */
  sendControl(message: Message): void {
    this.control.push(encodeMessage(message))
    this.pump()
  }

  /** Reserves a control slot, in order, for a frame built later (then call {@link pump}). */
  reserveControl(): ControlSlot {
    const slot: ControlSlot = {}
    this.control.push(slot)
    return slot
  }

  /**
   * Starts answering a remote VERSIONS: everything queued is superseded by
   * the answer computed now; live commits flow from here. Returns the
   * whenAcked marks, to queue after the answer.
   */
  beginAnswer(): DataItem[] {
    const marks = this.data.filter((item) => item.kind === 'mark')
    this.data = []
    this.parts = []
    this.queued = 0
    this.windowBase = this.lastSeq
    this.clearInflight()
    this.live = true
    // Live commits made while the answer is computed (listing names may be
    // async) are queued but held: they must not overtake the answer, or the
    // remote would hold a later change of one name (a counter's total, say)
    // without the earlier changes of another name that the answer brings.
    this.answering++
    return marks
  }

  /**
   * Queues bundles of names that never shared a unit (sent INDEPENDENT) of
   * an answer still being computed: they go out now, ahead of the rest of
   * the answer and of the live commits held for it, so that the remote
   * applies them while this side computes the rest (a first sync of many
   * names is then the slower side's time, not the sum of both sides').
   */
  queueAnswerPart(independent: readonly (readonly DeltaEntry[])[]): void {
    for (const entries of independent) this.parts.push({ kind: 'commit', entries, answer: true, independent: true })
    this.pump()
  }

  /**
   * Queues an answer: its records (each a commit with its provenance), its bundles, then DONE, then the marks of
   * {@link beginAnswer}, all ahead of the live commits queued while it was
   * computed; then lets data flow again.
   */
  queueAnswer(
    {
      records,
      bundles,
      independent,
    }: {
      readonly records: ReadonlyArray<{ readonly entries: readonly DeltaEntry[]; readonly provenance?: OutgoingProvenance | undefined }>
      readonly bundles: readonly (readonly DeltaEntry[])[]
      readonly independent?: readonly (readonly DeltaEntry[])[] | undefined
    },
    marks: DataItem[],
  ): void {
    const answer: DataItem[] = [
      ...records.map(({ entries, provenance }): DataItem => ({ kind: 'commit', entries, provenance, answer: true, records: true })),
      ...bundles.map((entries): DataItem => ({ kind: 'commit', entries, answer: true })),
      ...(independent ?? []).map((entries): DataItem => ({ kind: 'commit', entries, answer: true, independent: true })),
    ]
    this.data = [...answer, { kind: 'done' }, ...marks, ...this.data]
    this.queued += answer.length
    this.answering = Math.max(0, this.answering - 1)
    this.pump()
  }

  /**
   * Queues a live commit. Returns false if the queue overflowed: it was then
   * dropped (marks kept) and live sending stopped, for a resync instead.
   */
  queueCommit(entries: readonly DeltaEntry[], provenance?: OutgoingProvenance): boolean {
    this.data.push({ kind: 'commit', entries, provenance })
    this.queued++
    if (this.queued > this.context.maxQueued) {
      this.data = this.data.filter((item) => item.kind === 'mark')
      this.queued = 0
      this.live = false
      return false
    }
    this.pump()
    return true
  }

  /** Queues a whenAcked mark: `resolve` runs once everything sent before it is acknowledged. */
  queueMark(resolve: () => void): void {
    this.data.push({ kind: 'mark', resolve })
    this.pump()
  }

  /**
   * The remote refused an answer bundle (or a commit of records of several
   * names) because of one name (its access rules, filter or a delta it
   * cannot decode): the other names are sent again without it, so one
   * refused name never holds back the others. Returns `records` when it
   * was a commit of records (the name is then sent as merged state).
   */
  bundleRejected(seq: number, name: string): 'records' | undefined {
    const bundled = this.bundles.get(seq)
    if (!bundled) return undefined
    this.bundles.delete(seq)
    const refused = bundled.records ? 'records' : undefined
    const kept = bundled.entries.map((entry, at) => ({ entry, at })).filter(({ entry }) => entry.name !== name)
    if (kept.length === 0 || !this.live) return refused
    const rest = kept.map(({ entry }) => entry)
    // A commit of records keeps its provenance, with the signatures of the entries kept.
    const signatures = bundled.provenance?.signatures
    const provenance = bundled.provenance && (signatures ? { ...bundled.provenance, signatures: kept.map(({ at }) => signatures[at]) } : bundled.provenance)
    this.data.unshift({ kind: 'commit', entries: rest, answer: true, provenance, records: bundled.records, independent: bundled.independent })
    this.queued++
    this.pump()
    return refused
  }

  /**
   * Records an ACK: `unexpected` beyond what was sent, `stale` if not new,
   * else `advanced` (then call {@link releaseWaiters} and {@link pump}).
   */
  acknowledge(seq: number, now: () => number): 'unexpected' | 'stale' | 'advanced' {
    if (seq > this.lastSeq) return 'unexpected'
    if (seq <= this.acked) return 'stale'
    this.acked = seq
    while (this.inflight.length > 0 && this.inflight[0].seq <= seq) this.inflightBytes -= this.inflight.shift()!.bytes
    for (const bundled of this.bundles.keys()) if (bundled <= seq) this.bundles.delete(bundled)
    this.lastAckProgressAt = now()
    this.lastAckAt = this.lastAckProgressAt
    return 'advanced'
  }

  /** Resolves the marks waiting for acknowledgements up to `seq`. */
  releaseWaiters(seq: number): void {
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      if (this.waiters[i].target <= seq) {
        const [waiter] = this.waiters.splice(i, 1)
        waiter.resolve()
      }
    }
  }

  /**
   * A promise that resolves once everything queued before it is
   * acknowledged (see `SyncSession.whenAcked`); rejects with
   * `CONCORD_ABORTED` on `signal`, or with the error of {@link end}.
   */
  whenAcked(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => finish(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
      const finish = (error?: Error): void => {
        this.rejecters.delete(finish)
        signal?.removeEventListener('abort', onAbort)
        if (error) reject(error)
        else resolve()
      }
      if (signal?.aborted) return reject(new ConcordError(ErrorCodes.ABORTED, 'aborted'))
      signal?.addEventListener('abort', onAbort, { once: true })
      this.rejecters.add(finish)
      this.queueMark(() => finish())
    })
  }

  /** The session ended: drops every queue and rejects every {@link whenAcked} with `error`. */
  end(error: Error): void {
    this.data = []
    this.parts = []
    this.queued = 0
    this.control.length = 0
    this.bundles.clear()
    this.clearInflight()
    for (const reject of [...this.rejecters]) reject(error)
    this.waiters.length = 0
  }

  /** Whether a commit of `bytes` may go now: within the remote's window count and byte window. */
  private windowOpen(bytes: number): boolean {
    const remoteWindow = this.context.remote()?.window ?? 1
    if (this.lastSeq - Math.max(this.acked, this.windowBase) >= remoteWindow) return false
    const windowBytes = this.context.remoteWindowBytes()
    return windowBytes === undefined || this.inflightBytes === 0 || this.inflightBytes + bytes <= windowBytes
  }

  private clearInflight(): void {
    this.inflight.length = 0
    this.inflightBytes = 0
  }

  private nextFrames(): Uint8Array[] | undefined {
    const head = this.control[0]
    if (head !== undefined) {
      if (head instanceof Uint8Array) {
        this.control.shift()
        return this.controlFrames(head)
      }
      if (!head.frame) return undefined // VERSIONS still being built; keeps control order
      this.control.shift()
      return this.controlFrames(head.frame)
    }
    // Before the remote's VERSIONS is answered nothing is due but the parts of the answer: marks wait for the answer.
    while (this.live) {
      const fromParts = this.parts.length > 0
      if (!fromParts && (this.answering > 0 || this.data.length === 0)) break
      const item = fromParts ? this.parts[0] : this.data[0]
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
      const bytes = commitBytes(item.entries)
      if (!this.windowOpen(bytes)) return undefined
      if (fromParts) this.parts.shift()
      else {
        this.data.shift()
        this.queued--
      }
      const seq = ++this.lastSeq
      this.inflight.push({ seq, bytes })
      this.inflightBytes += bytes
      this.context.stats.commitsOut++
      if (item.kind === 'commit' && item.answer && (item.entries.length > 1 || item.records)) {
        this.bundles.set(seq, { entries: item.entries, provenance: item.provenance, records: item.records, independent: item.independent })
      }
      const independent = item.independent === true && this.context.remoteTakesIndependent()
      const message: Message =
        item.entries.length === 1
          ? { type: 'delta', seq, entry: item.entries[0] }
          : independent
            ? { type: 'transaction', seq, entries: item.entries, independent }
            : { type: 'transaction', seq, entries: item.entries }
      const frameLimit = this.frameLimit()
      const frames = this.framesOf(encodeMessage(message), frameLimit)
      if (item.kind === 'commit' && item.provenance) {
        // Who made it, right before it (sync/provenance.ts).
        const { agent, message: why, metaJson, authored, signatures } = item.provenance
        const claim = encodeMessage({ type: 'provenance', seq, agent: agent ?? this.context.agentId, message: why, metaJson, authored, signatures })
        return [...this.framesOf(claim, frameLimit), ...frames]
      }
      return frames
    }
    return undefined
  }

  /** The largest frame to send: ours, or the remote's if smaller. */
  private frameLimit(): number {
    return Math.min(this.context.maxFrameBytes, Math.max(MIN_FRAME_BYTES, this.context.remote()?.maxFrameBytes ?? DEFAULT_MAX_FRAME))
  }

  /**
   * A control message as the frames that carry it: chunked like a commit
   * (a VERSIONS of many names, a WANT, RANGES can exceed the remote's frame
   * limit) once the remote's HELLO was accepted; whole before (a HELLO or
   * AUTH may not come in chunks).
   */
  private controlFrames(bytes: Uint8Array): Uint8Array[] {
    return this.context.remote() ? this.framesOf(bytes, this.frameLimit()) : [bytes]
  }

  /** One message as the frames that carry it (chunked over `frameLimit`). */
  private framesOf(bytes: Uint8Array, frameLimit: number): Uint8Array[] {
    const frames = splitIntoChunks(bytes, frameLimit, this.nextChunkId)
    if (frames.length > 1) {
      this.nextChunkId++
      this.context.stats.chunksOut += frames.length
    }
    return frames
  }

  /** Sends what is due, one frame at a time, until nothing is or the session ends. */
  pump(): void {
    if (this.pumping || !this.context.active()) return
    this.pumping = true
    void (async () => {
      try {
        for (;;) {
          if (!this.context.active()) return
          const frames = this.nextFrames()
          if (!frames) return
          for (const frame of frames) {
            this.context.stats.framesOut++
            this.context.stats.bytesOut += frame.length
            await this.context.channel.send(frame)
          }
        }
      } catch (error) {
        this.context.fail(`send failed: ${(error as Error)?.message ?? String(error)}`)
      } finally {
        this.pumping = false
      }
    })()
  }
}
