/**
 * Rebuilding a name's state: the newest usable checkpoint at or before the
 * target seq, then replay of the records after it, checking every record's
 * checksum, seq and hash chain on the way.
 *
 * A damaged record (bad checksum, missing, broken chain) is classified by
 * what follows it: if no intact record comes after it, it is a torn tail
 * (reported, and truncated by the caller); otherwise it is a corrupt record
 * in the middle of the log, and the name fails with
 * `CONCORD_CORRUPT_RECORD`. A damaged record is never applied. An intact
 * record whose delta does not apply (over the replica's limits, or a code
 * change) fails the name (`CONCORD_LIMIT_EXCEEDED` or
 * `CONCORD_CORRUPT_RECORD`) and is never deleted: the store wrote it.
 *
 * With `merge` (document types), the records are applied in merged runs
 * (at most {@link REPLAY_RUN_RECORDS} records and {@link REPLAY_RUN_BYTES}
 * bytes, and within the replica's `limits.maxBytes`), each still checked
 * one by one: one Yjs or Automerge call per run instead of per record. A
 * run that does not apply as a whole (it throws, or changes nothing: a
 * record waits for a missing dependency), or any failure of a rebuild in
 * runs, has the whole rebuild done again record by record, which reports
 * exactly which record fails.
 */
import { bytesEqual } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { HlcTimestamp } from '../../crdt/hlc.ts'
import type { Replica } from '../../crdt/replica.ts'
import { decodeCheckpoint, type Checkpoint } from '../format/checkpoint.ts'
import { ZERO_HASH } from '../format/checksum.ts'
import { checkpointKey, logKey, logPrefix, parseSeqKey } from '../format/keys.ts'
import type { NameMeta } from '../format/name-meta.ts'
import { decodeRecord, type StoredRecord } from '../format/record.ts'
import type { Storage } from '../storage/storage.ts'

/** A torn tail found while rebuilding. */
export interface TornTail {
  /** First damaged seq; everything from it on is dropped. */
  readonly fromSeq: number
  /** Last seq the metadata claimed. */
  readonly toSeq: number
  readonly reason: string
}

/**
 * What a rebuild replays into: a replica, or a lighter target that takes
 * the deltas without one (names/stored-state.ts). `applyDelta` throws for a
 * delta that does not apply; `limits` as the replica's.
 */
export interface ReplayTarget {
  applyDelta(delta: Uint8Array): boolean
  readonly limits?: { readonly maxBytes: number } | undefined
}

/** What {@link rebuild} produced. */
export interface Rebuilt<T extends ReplayTarget = Replica> {
  readonly replica: T
  /** Seq of the last applied record (or of the checkpoint). */
  readonly seq: number
  /** Hash of that record (the chain continues from it). */
  readonly hash: Uint8Array
  /** Checkpoint the rebuild started from, if any. */
  readonly checkpoint?: Checkpoint
  /** Checkpoints that could not be used (damaged), newest first. */
  readonly badCheckpoints: readonly number[]
  /** Set when the log ends in damaged records (only when `allowTornTail`). */
  readonly torn?: TornTail
  /** Bytes of the records replayed. */
  readonly replayedBytes: number
  /** Time of the last record replayed (undefined when none was). */
  readonly hlc?: HlcTimestamp
}

/** Input of {@link rebuild}. */
export interface RebuildInput<T extends ReplayTarget = Replica> {
  readonly storage: Pick<Storage, 'get' | 'iterate'>
  readonly meta: NameMeta
  /** Rebuild the state as of this seq (<= meta.lastSeq). */
  readonly target: number
  /**
   * Go on past `target` to the end of the log (hydration: the stored
   * metadata may lag the log, whose tail is then derived from the records).
   * Records up to `target` must still be there.
   */
  readonly toEnd?: boolean
  /** Creates a replica of the name's type (or another {@link ReplayTarget}), from a snapshot or empty. */
  readonly create: (snapshot?: Uint8Array) => T
  /** Treat damaged trailing records as a torn tail instead of failing. */
  readonly allowTornTail: boolean
  /** Merges deltas of the name's type: records are then applied in merged runs (see the module comment). */
  readonly merge?: ((deltas: readonly Uint8Array[]) => Uint8Array) | undefined
  readonly signal?: AbortSignal
}

/** Most records applied in one merged run. */
export const REPLAY_RUN_RECORDS = 256
/** Most delta bytes applied in one merged run. */
export const REPLAY_RUN_BYTES = 256 * 1024

/** A merged run that did not apply as a whole: the rebuild is done again, record by record. */
class MergedRunFailed extends Error {}

function corrupt(name: string, message: string, cause?: unknown): ConcordError {
  return new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${name}": ${message}`, { cause })
}

/** Loads and checks one checkpoint; undefined if missing or damaged. */
export async function loadCheckpoint(storage: Pick<Storage, 'get'>, meta: NameMeta, seq: number): Promise<Checkpoint | undefined> {
  const bytes = await storage.get(checkpointKey(meta.name, seq))
  if (!bytes) return undefined
  try {
    const cp = decodeCheckpoint(bytes)
    return cp.name === meta.name && cp.seq === seq && cp.type === meta.type ? cp : undefined
  } catch (error) {
    if (isConcordError(error, ErrorCodes.UNSUPPORTED_VERSION)) throw error
    return undefined
  }
}

/** Rebuilds a name's state as of `target`. */
export async function rebuild<T extends ReplayTarget = Replica>(input: RebuildInput<T>): Promise<Rebuilt<T>> {
  if (input.merge === undefined) return rebuildOnce(input)
  try {
    return await rebuildOnce(input)
  } catch (error) {
    if (input.signal?.aborted) throw error
    // A run that did not apply, or damage met with a run pending: record by record, the first failing record is the one reported.
    return rebuildOnce({ ...input, merge: undefined })
  }
}

/** Whether `value` decodes as an intact record `keySeq` of `name` (what follows a damaged record). */
function intactRecord(name: string, value: Uint8Array, keySeq: number): boolean {
  try {
    const later = decodeRecord(value, { name, seq: keySeq })
    return later.name === name && later.seq === keySeq
  } catch {
    return false
  }
}

/**
 * The replayed deltas of one rebuild applied to its target: one by one, or
 * with `merge` in merged runs (see the module comment). A class rather than
 * closures made per rebuild: under tsx (esbuild keepNames) each named
 * closure costs a defineProperty, ~5% of a first sync's sender.
 */
class RunReplay {
  private run: Uint8Array[] = []
  private runSize = 0
  private runSeq = 0
  private readonly runBytes: number

  constructor(
    private readonly name: string,
    private readonly into: ReplayTarget,
    private readonly merge: ((deltas: readonly Uint8Array[]) => Uint8Array) | undefined,
  ) {
    this.runBytes = Math.min(REPLAY_RUN_BYTES, into.limits?.maxBytes ?? REPLAY_RUN_BYTES)
  }

  /** Takes record `at`'s delta: applied now, or added to the run. */
  replay(delta: Uint8Array, at: number): void {
    if (this.merge === undefined) return this.apply(delta, at)
    if (this.run.length > 0 && (this.run.length >= REPLAY_RUN_RECORDS || this.runSize + delta.length > this.runBytes)) this.flush()
    if (this.run.length === 0) this.runSeq = at
    this.run.push(delta)
    this.runSize += delta.length
  }

  /** Applies the run taken so far. */
  flush(): void {
    const { run } = this
    if (run.length === 1) this.apply(run[0], this.runSeq)
    else if (run.length > 1) {
      let changed: boolean
      try {
        changed = this.into.applyDelta(this.merge!(run))
      } catch {
        throw new MergedRunFailed()
      }
      if (!changed) throw new MergedRunFailed()
    }
    this.run = []
    this.runSize = 0
  }

  private apply(delta: Uint8Array, at: number): void {
    try {
      this.into.applyDelta(delta)
    } catch (error) {
      // The record is intact (checksum, seq and hash chain hold): the store
      // wrote it, so it is no torn tail and is never deleted for this.
      const limit = this.into.limits?.maxBytes
      if (limit !== undefined && delta.length > limit) {
        throw new ConcordError(
          ErrorCodes.LIMIT_EXCEEDED,
          `"${this.name}": record ${at} holds a change of ${delta.length} bytes, over the limit of ${limit} bytes this code loads (limits.maxBytes); nothing was deleted: open it with a higher limit`,
          { cause: error },
        )
      }
      throw corrupt(this.name, `record ${at} is intact but its delta does not apply (${(error as Error).message}); nothing was deleted`, error)
    }
  }
}

async function rebuildOnce<T extends ReplayTarget>(input: RebuildInput<T>): Promise<Rebuilt<T>> {
  const { storage, meta, target } = input
  const name = meta.name
  const badCheckpoints: number[] = []
  let replica: T | undefined
  let base: Checkpoint | undefined
  for (let i = meta.checkpoints.length - 1; i >= 0; i--) {
    const ref = meta.checkpoints[i]
    if (ref.seq > target) continue
    const cp = await loadCheckpoint(storage, meta, ref.seq)
    if (cp) {
      try {
        replica = input.create(cp.snapshot)
        base = cp
        break
      } catch {
        // An undecodable snapshot: fall back to an older checkpoint.
      }
    }
    badCheckpoints.push(ref.seq)
  }
  if (!replica) {
    if (meta.firstSeq > 1 && target >= meta.firstSeq - 1) {
      throw corrupt(name, `no usable checkpoint at or before seq ${target} and the log before seq ${meta.firstSeq} was trimmed`)
    }
    if (meta.firstSeq > 1) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}": seq ${target} was trimmed by retention`)
    replica = input.create()
  }
  let seq = base?.seq ?? 0
  let hash = base?.hash ?? ZERO_HASH
  let replayedBytes = 0
  let lastHlc: HlcTimestamp | undefined
  let lastKeySeq = 0
  if (!input.toEnd && seq >= target) return { replica, seq, hash, checkpoint: base, badCheckpoints, replayedBytes }
  const runs = new RunReplay(name, replica, input.merge)
  // Replay (seq, target]; on the first damaged record, look at what follows.
  let damage: { seq: number; reason: string; cause?: unknown } | undefined
  const range = input.toEnd
    ? { prefix: logPrefix(name), gt: logKey(name, seq), signal: input.signal }
    : { prefix: logPrefix(name), gt: logKey(name, seq), lte: logKey(name, target), signal: input.signal }
  for await (const entry of storage.iterate(range)) {
    const keySeq = parseSeqKey(entry.key[2] ?? '')
    if (keySeq > lastKeySeq) lastKeySeq = keySeq
    if (!damage && keySeq !== seq + 1) {
      damage = { seq: seq + 1, reason: Number.isNaN(keySeq) ? 'malformed key' : `record ${seq + 1} is missing` }
    }
    if (damage) {
      // Anything intact after a damaged record means the damage is in the middle.
      if (intactRecord(name, entry.value, keySeq)) {
        throw corrupt(name, `record ${damage.seq} is damaged (${damage.reason}) and record ${keySeq} after it is intact`, damage.cause)
      }
      continue
    }
    const expected = seq + 1
    let record: StoredRecord
    try {
      record = decodeRecord(entry.value, { name, seq: expected, prevHash: hash })
      if (record.name !== name) throw corrupt(name, `record ${expected} belongs to "${record.name}"`)
      if (record.seq !== expected) throw corrupt(name, `record under seq ${expected} says seq ${record.seq}`)
      if (!bytesEqual(record.prevHash, hash)) throw corrupt(name, `record ${expected} breaks the hash chain`)
    } catch (error) {
      if (isConcordError(error, ErrorCodes.UNSUPPORTED_VERSION)) throw error
      damage = { seq: expected, reason: (error as Error).message, cause: error }
      continue
    }
    // The metadata anchors the chain at its lastSeq (a version 4 record holds no link of its own to check):
    // an intact record whose chain misses the anchor is no torn tail, so the name fails and nothing is deleted.
    if (expected === meta.lastSeq && !bytesEqual(record.hash, meta.lastHash)) {
      throw corrupt(
        name,
        `record ${expected} breaks the hash chain: the records up to it do not hash to the metadata's lastHash (one at or before it was replaced)`,
      )
    }
    runs.replay(record.delta, expected)
    seq = expected
    hash = record.hash
    replayedBytes += record.size
    lastHlc = record.hlc
  }
  runs.flush()
  if (!damage && seq < target) damage = { seq: seq + 1, reason: `records ${seq + 1}..${target} are missing` }
  if (damage) {
    if (!input.allowTornTail) throw corrupt(name, `record ${damage.seq}: ${damage.reason}`, damage.cause)
    const toSeq = Math.max(meta.lastSeq, lastKeySeq)
    return { replica, seq, hash, checkpoint: base, badCheckpoints, replayedBytes, hlc: lastHlc, torn: { fromSeq: damage.seq, toSeq, reason: damage.reason } }
  }
  return { replica, seq, hash, checkpoint: base, badCheckpoints, replayedBytes, hlc: lastHlc }
}
