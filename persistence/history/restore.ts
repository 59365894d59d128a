/**
 * Point-in-time restore: the whole store as it was at a time, written to a
 * new folder (`Store.restoreTo`, `concord restore-at`). A consistent cut:
 * every name is cut after its last record at or before the time (an HLC,
 * or a wall-clock time in ms, compared with the records' HLC), and its
 * records up to there are copied byte for byte (from both tiers of its log,
 * so the hash chain, authors, messages and `history`/`at`/`blame` of the
 * restored store are the original's up to the cut). A name whose older
 * records were deleted by retention is restored from the checkpoint that
 * anchors its log, when the cut is at or after it; otherwise it is listed
 * as `unavailable`. Names created after the time are not in the copy.
 * The records of one transaction share one HLC (persistence/FORMAT.md), so
 * a cut takes a transaction whole or not at all.
 *
 * The new folder is unclaimed (FORMAT.md "Store info"): the first peer that
 * opens it owns it. Open it with a new agent id, unless the original
 * store will never write again (the same id would issue again the dots it
 * issued after the cut).
 */
import { bytesEqual } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { HlcTimestamp } from '../../crdt/hlc.ts'
import type { StoreContext } from '../context.ts'
import { ZERO_HASH } from '../format/checksum.ts'
import { checkpointKey, logKey, metaKey, STORE_INFO_KEY } from '../format/keys.ts'
import { encodeMeta, type NameMeta } from '../format/name-meta.ts'
import { decodeRecord } from '../format/record.ts'
import { encodeStoreInfo, UNCLAIMED } from '../format/store-info.ts'
import { logEntries } from '../lifecycle/log-archive.ts'
import type { Names } from '../names/owner.ts'
import { loadCheckpoint } from '../names/replay.ts'
import { openLevelStorage } from '../storage/level/open-level-storage.ts'
import type { SignalOptions, StorageOperation } from '../storage/storage.ts'

/** The time of a restore: an HLC, or a wall-clock time in ms (every record whose HLC wall is at or before it). */
export type RestorePoint = HlcTimestamp | number

/** What {@link restoreTo} wrote. */
export interface RestoreReport {
  readonly dir: string
  /** The cut, per name restored: its last seq at the time. */
  readonly names: Array<{ readonly name: string; readonly type: string; readonly seq: number }>
  /** Names that existed at the time but cannot be restored (their records then were deleted by retention). */
  readonly unavailable: Array<{ readonly name: string; readonly reason: string }>
}

/** Operations per storage batch while copying. */
const BATCH = 1000

function atOrBefore(hlc: HlcTimestamp, point: RestorePoint): boolean {
  if (typeof point === 'number') return hlc.wall <= point
  return hlc.wall < point.wall || (hlc.wall === point.wall && hlc.logical <= point.logical)
}

function checkPoint(point: unknown): RestorePoint {
  if (typeof point === 'number' && Number.isFinite(point) && point >= 0) return point
  if (point !== null && typeof point === 'object') {
    const { wall, logical } = point as HlcTimestamp
    if (Number.isSafeInteger(wall) && wall >= 0 && Number.isSafeInteger(logical) && logical >= 0) return { wall, logical }
  }
  throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'at must be a time in ms or an HLC { wall, logical }')
}

/** Writes the store as it was at `at` to a new LevelDB folder `dir` (which must not exist or be empty of a store). */
export async function restoreTo(context: StoreContext, names: Names, dir: string, options: { at: RestorePoint } & SignalOptions): Promise<RestoreReport> {
  context.checkOpen()
  const point = checkPoint(options.at)
  if (typeof dir !== 'string' || dir.length === 0) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'restoreTo needs a folder')
  if (context.options.dir !== undefined && dir === context.options.dir)
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'restoreTo writes a new folder, not the store’s own')
  await context.committer.idle()
  const metas: NameMeta[] = []
  for await (const meta of names.metas({ signal: options.signal })) metas.push(meta)
  const target = await openLevelStorage({ dir, signal: options.signal })
  const report: RestoreReport = { dir, names: [], unavailable: [] }
  try {
    if (await target.get(STORE_INFO_KEY)) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `${dir} already holds a store: restore into a new folder`)
    let ops: StorageOperation[] = []
    const drain = async (): Promise<void> => {
      if (ops.length === 0) return
      const batch = ops
      ops = []
      await target.batch(batch)
    }
    for (const meta of metas) {
      const name = meta.name
      // The records at or before the point: from the start of the log (archived ones included), in order.
      let anchor: { seq: number; hash: Uint8Array; bytes: Uint8Array; size: number } | undefined
      let seq = 0
      let hash: Uint8Array = ZERO_HASH
      let bytes = 0
      let touched = meta.created
      const copied: StorageOperation[] = []
      for await (const entry of logEntries(context, meta, { from: 1, to: meta.lastSeq, signal: options.signal })) {
        let record = decodeRecord(entry.value, { name, seq: entry.seq, prevHash: hash })
        if (!atOrBefore(record.hlc, point)) break
        if (seq === 0 && entry.seq !== 1) {
          // Older records were deleted by retention: start from the checkpoint that anchors the log.
          const ref = meta.checkpoints.find((cp) => cp.seq === entry.seq - 1)
          const cp = ref && (await loadCheckpoint(context.storage, meta, ref.seq))
          const cpBytes = ref && (await context.storage.get(checkpointKey(name, ref.seq)))
          if (!cp || !cpBytes) break
          anchor = { seq: cp.seq, hash: cp.hash, bytes: cpBytes, size: ref.size }
          seq = cp.seq
          hash = cp.hash
          record = decodeRecord(entry.value, { name, seq: entry.seq, prevHash: hash })
        }
        if (entry.seq !== seq + 1 || !bytesEqual(record.prevHash, hash)) {
          throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${name}": record ${entry.seq} is missing or breaks the hash chain (run verify)`)
        }
        copied.push({ type: 'put', key: logKey(name, entry.seq), value: entry.value })
        seq = entry.seq
        hash = record.hash
        bytes += record.size
        touched = Math.max(touched, record.hlc.wall)
      }
      if (seq === 0) {
        // No record at or before the point: unless its first records were deleted (then it may have had some), the name
        // existed empty if it was created by then, else it came later.
        if (meta.firstSeq > 1) report.unavailable.push({ name, reason: `its records before seq ${meta.firstSeq} were deleted by retention` })
        else if (meta.created <= (typeof point === 'number' ? point : point.wall)) {
          ops.push({
            type: 'put',
            key: metaKey(name),
            value: encodeMeta({ ...meta, touched: meta.created, lastSeq: 0, lastHash: ZERO_HASH, logBytes: 0, checkpoints: [] }),
          })
          report.names.push({ name, type: meta.type, seq: 0 })
        }
        continue
      }
      const restored: NameMeta = {
        ...meta,
        touched,
        lastSeq: seq,
        lastHash: hash,
        firstSeq: anchor ? anchor.seq + 1 : 1,
        logBytes: bytes,
        checkpoints: anchor ? [{ seq: anchor.seq, size: anchor.size }] : [],
      }
      if (anchor) ops.push({ type: 'put', key: checkpointKey(name, anchor.seq), value: anchor.bytes })
      for (const op of copied) {
        ops.push(op)
        if (ops.length >= BATCH) await drain()
      }
      ops.push({ type: 'put', key: metaKey(name), value: encodeMeta(restored) })
      report.names.push({ name, type: meta.type, seq })
    }
    // The store info last: a folder without it is no store, so a restore cut short is never opened as one.
    ops.push({ type: 'put', key: STORE_INFO_KEY, value: encodeStoreInfo({ agentId: UNCLAIMED, created: context.now() }) })
    await drain()
    await target.flush()
  } finally {
    await target.close()
  }
  return report
}
