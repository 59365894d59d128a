/**
 * The two tiers of a name's log and the retention policies that move
 * records between them (persistence/options.ts `Retention`):
 * - the hot tier: records in LevelDB under `l / name / seq`, from the
 *   metadata's `firstSeq` on;
 * - the archive tier: records before `firstSeq` moved by `{ archiveAfterMs }`
 *   to segment files in `<archive dir>/segments/`, listed by the name's
 *   segment index (persistence/format/segments.ts).
 * {@link logEntries} reads both, oldest first or newest first, so
 * `history`, `at` and `verify` see one log. {@link applyRetention} moves (or,
 * under `{ deleteAfterMs }`, deletes) the records older than the window, up
 * to the newest checkpoint.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { StoreContext } from '../context.ts'
import { encodeCheckpoint } from '../format/checkpoint.ts'
import { checkpointKey, logKey, logPrefix, parseSeqKey } from '../format/keys.ts'
import type { NameMeta } from '../format/name-meta.ts'
import { decodeRecord, type StoredRecord } from '../format/record.ts'
import { decodeSegmentIndex, encodeSegmentIndex, type SegmentRef, segmentIndexKey } from '../format/segments.ts'
import type { NameEntry } from '../names/entry.ts'
import { rebuild } from '../names/replay.ts'
import type { StoreOptions } from '../options.ts'
import type { SignalOptions, Storage } from '../storage/storage.ts'
import { readSegment, removeSegments, writeSegment } from './archive-files.ts'

/** The archive folder of a store: `archive.dir`, else `<dir>.archive`; undefined for a store in memory. */
export function archiveDirOf(options: StoreOptions): string | undefined {
  return options.archive?.dir ?? (options.dir !== undefined ? `${options.dir}.archive` : undefined)
}

/** The segments of `name`'s archive tier, oldest first (none when nothing was archived). */
export async function readSegmentIndex(storage: Storage, name: string): Promise<SegmentRef[]> {
  const bytes = await storage.get(segmentIndexKey(name))
  return bytes ? decodeSegmentIndex(name, bytes) : []
}

/** Deletes the segment files of `name` (its keys are deleted by the caller, the index with them). */
export async function deleteSegments(context: StoreContext, name: string): Promise<void> {
  const dir = archiveDirOf(context.options)
  if (!dir) return
  const segments = await readSegmentIndex(context.storage, name).catch(() => [])
  await removeSegments(dir, segments)
}

/** One encoded log record and the seq its key (or segment) files it under. */
export interface LogEntry {
  readonly seq: number
  readonly value: Uint8Array
}

/** Range of {@link logEntries}: seqs `from..to` (inclusive), newest first when `reverse`. */
export interface LogRange extends SignalOptions {
  readonly from: number
  readonly to: number
  readonly reverse?: boolean
}

/**
 * The records of `name` from `from` to `to` across both tiers: archived
 * segments for seqs before `meta.firstSeq`, LevelDB from it on. Segments are
 * read whole (checked against the index's hash); a missing or damaged one
 * throws `CONCORD_CORRUPT_RECORD`. Seqs trimmed by a delete policy are simply
 * absent (the first entry then starts after them).
 */
export async function* logEntries(context: StoreContext, meta: NameMeta, range: LogRange): AsyncGenerator<LogEntry> {
  const { storage } = context
  const name = meta.name
  const from = Math.max(1, range.from)
  const to = range.to
  if (from > to) return
  const segments =
    from < meta.firstSeq ? (await readSegmentIndex(storage, name)).filter((s) => s.toSeq >= from && s.fromSeq <= to && s.fromSeq < meta.firstSeq) : []
  const archived = async function* (order: readonly SegmentRef[]): AsyncGenerator<LogEntry> {
    if (order.length === 0) return
    const dir = archiveDirOf(context.options)
    if (!dir) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${name}": records are archived but the store has no archive folder`)
    for (const ref of order) {
      const entries = (await readSegment(dir, name, ref)).map((entry) => ({ seq: parseSeqKey(entry.key[2] ?? ''), value: entry.value }))
      if (range.reverse) entries.reverse()
      for (const entry of entries) if (entry.seq >= from && entry.seq <= to && entry.seq < meta.firstSeq) yield entry
    }
  }
  const hot = async function* (): AsyncGenerator<LogEntry> {
    const gte = Math.max(from, meta.firstSeq)
    if (gte > to) return
    for await (const entry of storage.iterate({
      prefix: logPrefix(name),
      gte: logKey(name, gte),
      lte: logKey(name, to),
      reverse: range.reverse,
      signal: range.signal,
    })) {
      yield { seq: parseSeqKey(entry.key[2] ?? ''), value: entry.value }
    }
  }
  if (range.reverse) {
    yield* hot()
    yield* archived([...segments].reverse())
  } else {
    yield* archived(segments)
    yield* hot()
  }
}

/** What {@link applyRetention} did to a name. */
export interface RetentionReport {
  readonly name: string
  /** Records moved to the archive tier. */
  readonly archived: number
  /** Records deleted. */
  readonly deleted: number
}

/**
 * Applies a time-window retention policy to a hydrated name: the records
 * older than `now - window` (by their HLC wall time) and at or before the
 * newest checkpoint (recovery never reads past it) leave the hot tier:
 * moved to a segment file, or deleted. A deletion leaves a checkpoint at
 * its cut to anchor what is left (written from a replay when there is
 * none). `'full'` and `{ checkpoints: K }` do nothing here (the second
 * trims at each checkpoint).
 */
export async function applyRetention(context: StoreContext, entry: NameEntry, options: SignalOptions = {}): Promise<RetentionReport> {
  const name = entry.name
  const policy = entry.retention
  const none = { name, archived: 0, deleted: 0 }
  if (typeof policy !== 'object' || 'checkpoints' in policy) return none
  const archive = 'archiveAfterMs' in policy
  const window = archive ? policy.archiveAfterMs : policy.deleteAfterMs
  const cutoff = context.now() - window
  const meta = entry.state.meta
  const newest = meta.checkpoints.at(-1)?.seq ?? 0
  const first = meta.firstSeq
  if (newest < first) return none
  // The cut: the last record older than the window, up to the newest checkpoint (a name's records are in HLC order: one clock stamps them).
  const entries: Array<{ key: readonly string[]; value: Uint8Array }> = []
  let cutRecord: StoredRecord | undefined
  for await (const e of context.storage.iterate({ prefix: logPrefix(name), gte: logKey(name, first), lte: logKey(name, newest), signal: options.signal })) {
    const record = decodeRecord(e.value, { name, seq: parseSeqKey(e.key[2] ?? '') })
    if (record.hlc.wall > cutoff) break
    if (record.seq !== (cutRecord?.seq ?? first - 1) + 1) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${name}": record ${record.seq - 1} is missing`)
    cutRecord = record
    if (archive) entries.push(e)
  }
  if (!cutRecord) return none
  const upTo = cutRecord.seq
  let segment: SegmentRef | undefined
  let segments: SegmentRef[] = []
  let anchor: { bytes: Uint8Array; seq: number } | undefined
  if (archive) {
    const dir = archiveDirOf(context.options)
    if (!dir) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `"${name}": retention { archiveAfterMs } needs \`archive.dir\` (or a store \`dir\`)`)
    segments = await readSegmentIndex(context.storage, name)
    if ((segments.at(-1)?.toSeq ?? 0) !== first - 1) {
      throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${name}": the archive tier ends at ${segments.at(-1)?.toSeq ?? 0}, the log starts at ${first}`)
    }
    segment = await writeSegment(dir, name, first, upTo, entries)
  } else if (!meta.checkpoints.some((cp) => cp.seq === upTo)) {
    // What is left needs an anchor at the cut: the state there, replayed.
    const rebuilt = await rebuild({
      storage: context.storage,
      meta,
      target: upTo,
      allowTornTail: false,
      merge: context.replayMergerOf(meta.type),
      signal: options.signal,
      create: (snapshot) => context.detachedReplica(meta.type, snapshot),
    })
    const bytes = encodeCheckpoint({
      name,
      type: meta.type,
      seq: upTo,
      hash: rebuilt.hash,
      schema: meta.schema,
      hlc: cutRecord.hlc,
      snapshot: rebuilt.replica.snapshot(),
    })
    anchor = { bytes, seq: upTo }
  }
  const { state } = entry
  const done = await context.committer.enqueue({
    sync: true,
    states: [state],
    build: (b) => {
      const now = b.meta(state)
      if (now.firstSeq !== first) return false
      for (let seq = first; seq <= upTo; seq++) b.del(logKey(name, seq))
      let checkpoints = now.checkpoints
      if (segment) b.put(segmentIndexKey(name), encodeSegmentIndex(name, [...segments, segment]))
      else {
        // Deleted: the checkpoint at the cut anchors what is left; older ones go.
        if (anchor) {
          b.put(checkpointKey(name, anchor.seq), anchor.bytes)
          checkpoints = [...checkpoints.filter((cp) => cp.seq !== anchor!.seq), { seq: anchor.seq, size: anchor.bytes.length }].sort((x, y) => x.seq - y.seq)
        }
        for (const cp of checkpoints) if (cp.seq < upTo) b.del(checkpointKey(name, cp.seq))
        checkpoints = checkpoints.filter((cp) => cp.seq >= upTo)
      }
      b.setMeta(state, { ...now, firstSeq: upTo + 1, checkpoints })
      return true
    },
  })
  if (!done) return none
  const moved = upTo - first + 1
  return { name, archived: archive ? moved : 0, deleted: archive ? 0 : moved }
}
