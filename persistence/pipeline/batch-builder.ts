/**
 * The batch builder of the commit pipeline: the operations of one storage
 * batch, with the names' metadata as it will be after it (seqs and hashes
 * are assigned here, when the batch is formed), savepoints to drop a unit
 * whose build throws, and what to run once the batch is written.
 */
import type { HlcTimestamp } from '../../crdt/hlc.ts'
import { logKey, TAIL_MARKER, tailKey } from '../format/keys.ts'
import type { NameMeta } from '../format/name-meta.ts'
import { encodeHashedRecord, type LogRecord, type RecordKind } from '../format/record.ts'

type RecordSignature = NonNullable<LogRecord['signature']>
import type { NameState } from './name-state.ts'
import type { StorageKey, StorageOperation } from '../storage/storage.ts'

/** A record as committed, handed to listeners. */
export interface CommittedRecord {
  readonly name: string
  readonly seq: number
  readonly hlc: HlcTimestamp
  readonly agent: string
  readonly kind: RecordKind
  /** The delta bytes logged. */
  readonly delta: Uint8Array
  readonly hash: Uint8Array
  readonly size: number
  readonly message?: string | undefined
  readonly metaJson?: string | undefined
  readonly authored?: HlcTimestamp | undefined
  readonly signature?: RecordSignature | undefined
}

/** Input of {@link BatchBuilder.append}. */
export interface AppendInput {
  /** The delta bytes to log. */
  readonly delta: Uint8Array
  readonly hlc: HlcTimestamp
  readonly agent: string
  readonly kind?: RecordKind
  /** Why (record format 2). */
  readonly message?: string | undefined
  /** Application metadata, canonical JSON (record format 2). */
  readonly metaJson?: string | undefined
  /** When its author made it, for a change made elsewhere (record format 2). */
  readonly authored?: HlcTimestamp | undefined
  /** The author's signature (record format 3). */
  readonly signature?: RecordSignature | undefined
  /** Wall time of the write (ms), recorded as the name's last touch. */
  readonly now: number
}

/** Collects the operations of one batch; handed to each unit's `build`. */
export class BatchBuilder {
  readonly ops: StorageOperation[] = []
  readonly records: CommittedRecord[] = []
  /** Bytes of the values put so far. */
  bytes = 0
  private readonly tentative = new Map<NameState, NameMeta>()
  /** Names whose metadata this batch writes to storage. */
  private readonly persist = new Set<NameState>()
  /** Names this batch writes a tail marker for, in order (rolled back by length), and as a set. */
  private readonly marked: NameState[] = []
  private readonly markedSet = new Set<NameState>()
  /** Undo journal of `tentative` and `persist` (state, meta and flag before the change) for rollbacks. */
  private readonly journal: Array<[NameState, NameMeta | undefined, boolean]> = []
  private readonly afterCommit: Array<() => void> = []

  /** The name's metadata as it will be after this batch so far. */
  meta(state: NameState): NameMeta {
    return this.tentative.get(state) ?? state.meta
  }

  /** Replaces the name's metadata in this batch and writes it to storage (once, at the end of the batch). */
  setMeta(state: NameState, meta: NameMeta): void {
    this.journal.push([state, this.tentative.get(state), this.persist.has(state)])
    this.tentative.set(state, meta)
    this.persist.add(state)
  }

  private setTentative(state: NameState, meta: NameMeta): void {
    this.journal.push([state, this.tentative.get(state), this.persist.has(state)])
    this.tentative.set(state, meta)
  }

  /** Appends one record to the name's log; returns it as it will be committed. */
  append(state: NameState, input: AppendInput): CommittedRecord {
    // A name not stored yet is created in the batch of its first record; one stored empty by openMany has its metadata written with it.
    if (!this.persist.has(state) && (state.unborn || (state.metaWithFirstRecord && !state.metaBehind && state.meta.lastSeq === 0))) {
      this.setMeta(state, this.meta(state))
    }
    const meta = this.meta(state)
    const seq = meta.lastSeq + 1
    const kind = input.kind ?? 'delta'
    const { message, metaJson, authored, signature } = input
    const { bytes, hash } = encodeHashedRecord({
      name: meta.name,
      seq,
      hlc: input.hlc,
      agent: input.agent,
      kind,
      prevHash: meta.lastHash,
      delta: input.delta,
      message,
      metaJson,
      authored,
      signature,
    })
    this.ops.push({ type: 'put', key: logKey(meta.name, seq), value: bytes })
    this.bytes += bytes.length
    if (!state.metaBehind && !this.markedSet.has(state) && !this.persist.has(state)) {
      // The first record past the stored metadata: mark the name (see tailKey).
      this.ops.push({ type: 'put', key: tailKey(meta.name), value: TAIL_MARKER })
      this.marked.push(state)
      this.markedSet.add(state)
    }
    this.setTentative(state, { ...meta, lastSeq: seq, lastHash: hash, logBytes: meta.logBytes + bytes.length, touched: Math.max(meta.touched, input.now) })
    const record: CommittedRecord = {
      name: meta.name,
      seq,
      hlc: input.hlc,
      agent: input.agent,
      kind,
      delta: input.delta,
      hash,
      size: bytes.length,
      message,
      metaJson,
      authored,
      signature,
    }
    this.records.push(record)
    return record
  }

  /** Adds a put. */
  put(key: StorageKey, value: Uint8Array): void {
    this.ops.push({ type: 'put', key, value })
    this.bytes += value.length
  }

  /** Adds a delete. */
  del(key: StorageKey): void {
    this.ops.push({ type: 'del', key })
  }

  /** Runs `fn` once the batch is written (before the units resolve; their names' `pending` no longer counts them). */
  onCommit(fn: () => void): void {
    this.afterCommit.push(fn)
  }

  /** @internal a point to roll back to if a unit's build throws. */
  savepoint(): { ops: number; records: number; after: number; journal: number; bytes: number; marked: number } {
    return {
      ops: this.ops.length,
      records: this.records.length,
      after: this.afterCommit.length,
      journal: this.journal.length,
      bytes: this.bytes,
      marked: this.marked.length,
    }
  }

  /** @internal */
  rollback(point: ReturnType<BatchBuilder['savepoint']>): void {
    this.ops.length = point.ops
    this.bytes = point.bytes
    while (this.marked.length > point.marked) this.markedSet.delete(this.marked.pop()!)
    this.records.length = point.records
    this.afterCommit.length = point.after
    while (this.journal.length > point.journal) {
      const [state, previous, persisted] = this.journal.pop()!
      if (previous === undefined) this.tentative.delete(state)
      else this.tentative.set(state, previous)
      if (!persisted) this.persist.delete(state)
    }
  }

  /** @internal the touched names and their new metadata. */
  touched(): Map<NameState, NameMeta> {
    return this.tentative
  }

  /** @internal the names whose metadata this batch writes. */
  persisted(): Set<NameState> {
    return this.persist
  }

  /** @internal whether this batch writes a tail marker for the name. */
  marks(state: NameState): boolean {
    return this.markedSet.has(state)
  }

  /** @internal */
  runAfterCommit(): void {
    for (const fn of this.afterCommit) fn()
  }
}
