/**
 * The logged changes of a name that a remote lacks, for an anti-entropy
 * answer made of records (sync/PROTOCOL.md "Answers made of records"): the
 * records themselves, with their author, time, message, meta and
 * signature, so that a change that reaches a peer by resync keeps its
 * provenance as a live one does.
 *
 * The log is read newest first. A record the remote lacks (or may lack:
 * crdt/record-selection.ts) is taken; at a record it holds, the records
 * taken so far are checked to bring everything it lacks (`covers`, exact),
 * and the run ends there. The run is refused (undefined: the answer sends
 * merged state) when the records taken exceed `maxBytes` or `maxRecords`,
 * when the log is read `maxBytes * 4` bytes back without a run that
 * covers, when the records the remote lacks are no longer in the log
 * (trimmed by retention), or for a type whose records cannot be selected.
 *
 * A remote that holds nothing of the name (its version is the type's empty
 * one) lacks every record: the whole log is taken without asking the
 * selector (for Automerge, reading every change's hash is most of an
 * answer's cost), and it covers when it reaches back to the name's first
 * record with none left out by `until`; otherwise the exact run is made.
 */
import { bytesEqual } from '../../crdt/codec.ts'
import { compareHlc, type HlcTimestamp } from '../../crdt/hlc.ts'
import { recordSelector, selectsRecords } from '../../crdt/record-selection.ts'
import type { ReplicaType } from '../../crdt/replica.ts'
import type { RecordSignature } from '../../crdt/signature.ts'
import type { StoreContext } from '../context.ts'
import { decodeRecord, type StoredRecord } from '../format/record.ts'
import { logEntries } from '../lifecycle/log-archive.ts'
import type { NameMeta } from '../format/name-meta.ts'
import type { Names } from '../names/owner.ts'
import type { SignalOptions } from '../storage/storage.ts'

/** One logged change as an answer sends it. */
export interface AnswerRecord {
  readonly seq: number
  readonly delta: Uint8Array
  /** Its author. */
  readonly agent: string
  /** When its author made it (`authored`, else {@link hlc}). */
  readonly authored: HlcTimestamp
  /** When it was logged here. */
  readonly hlc: HlcTimestamp
  readonly message?: string | undefined
  readonly metaJson?: string | undefined
  readonly signature?: RecordSignature | undefined
}

/** The records a remote lacks, oldest first, and what must still go as merged state. */
export interface RecordRun {
  readonly records: readonly AnswerRecord[]
  /** Merged state to send after the records (a Yjs delete set), when some. */
  readonly residual?: Uint8Array | undefined
}

/** Bounds of one run. */
export interface RecordRunLimits extends SignalOptions {
  /** Most delta bytes of the records taken. */
  readonly maxBytes: number
  /** Most records taken. */
  readonly maxRecords: number
  /** Leave out the records logged after this time (an answer's instant, so that every name's records stop at it). */
  readonly until?: HlcTimestamp | undefined
}

/** Times the run is checked against what the remote lacks before it is given up. */
const MAX_COVER_CHECKS = 16

/**
 * The records of `name` (of `type`) that a remote at `since` lacks, given
 * `lack` (what it lacks: `deltaSince(since)` of the current state), or
 * undefined when the answer should be merged state (see the module comment).
 */
export async function recordsSince(
  context: StoreContext,
  names: Names,
  name: string,
  type: ReplicaType,
  since: Uint8Array,
  lack: Uint8Array,
  limits: RecordRunLimits,
): Promise<RecordRun | undefined> {
  if (!selectsRecords(type)) return undefined
  const meta = await names.meta(name, { signal: limits.signal })
  if (!meta || meta.type !== type) return undefined
  if (bytesEqual(since, context.emptyVersion(type))) {
    const whole = await wholeLog(context, meta, limits)
    if (whole !== 'exact') return whole
  }
  const selector = recordSelector(type, since, lack, () => context.detachedReplica(type))
  if (!selector) return undefined
  const taken: AnswerRecord[] = []
  let bytes = 0
  let scanned = 0
  let checks = 0
  let checkedAt = -1
  const run = (): RecordRun | undefined => {
    const ordered = [...taken].reverse()
    const { covered, residual } = selector.covers(ordered.map((record) => record.delta))
    return covered ? { records: ordered, residual } : undefined
  }
  try {
    for await (const entry of logEntries(context, meta, { from: 1, to: meta.lastSeq, reverse: true, signal: limits.signal })) {
      const record = decodeRecord(entry.value, { name: meta.name, seq: entry.seq })
      if (limits.until !== undefined && compareHlc(record.hlc, limits.until) > 0) continue
      scanned += record.delta.length
      if (scanned > limits.maxBytes * 4) return undefined
      const lacks = selector.lacks(record.delta)
      if (lacks === false) {
        // The remote got this far: do the records taken bring all it lacks?
        if (taken.length === checkedAt) continue
        checkedAt = taken.length
        const found = run()
        if (found) return found
        if (++checks >= MAX_COVER_CHECKS) return undefined
        continue
      }
      bytes += record.delta.length
      if (bytes > limits.maxBytes || taken.length >= limits.maxRecords) return undefined
      taken.push(answerRecord(record))
    }
    // The whole retained log: it covers only if nothing the remote lacks was trimmed.
    return run()
  } catch {
    // A record or segment that cannot be read or selected: merged state says it all.
    return undefined
  }
}

function answerRecord(record: StoredRecord): AnswerRecord {
  return {
    seq: record.seq,
    delta: record.delta,
    agent: record.agent,
    authored: record.authored ?? record.hlc,
    hlc: record.hlc,
    message: record.message,
    metaJson: record.metaJson,
    signature: record.signature,
  }
}

/**
 * For a remote that holds nothing of the name: every record, oldest first,
 * when the log still holds them all from the first; undefined when they
 * exceed `limits` or cannot be read; `'exact'` when some are trimmed or left
 * out by `until` (the exact run decides).
 */
async function wholeLog(context: StoreContext, meta: NameMeta, limits: RecordRunLimits): Promise<RecordRun | undefined | 'exact'> {
  if (meta.lastSeq === 0) return 'exact'
  const taken: AnswerRecord[] = []
  let bytes = 0
  try {
    for await (const entry of logEntries(context, meta, { from: 1, to: meta.lastSeq, reverse: true, signal: limits.signal })) {
      const record = decodeRecord(entry.value, { name: meta.name, seq: entry.seq })
      if (limits.until !== undefined && compareHlc(record.hlc, limits.until) > 0) return 'exact'
      bytes += record.delta.length
      if (bytes > limits.maxBytes || taken.length >= limits.maxRecords) return undefined
      taken.push(answerRecord(record))
    }
  } catch {
    return undefined
  }
  // Every record from the first, with no hole: replayed in order they are the name's state.
  if (taken.length !== meta.lastSeq || taken[taken.length - 1]?.seq !== 1) return 'exact'
  return { records: taken.reverse() }
}
