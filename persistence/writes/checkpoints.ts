/**
 * Checkpoints: the unit that writes one (with the retention trim it
 * allows), and when one is due after a write (the name's policy: records
 * or bytes since the last one). Timed checkpoints are the sweep's
 * (persistence/lifecycle/lifecycle.ts), the ones on close the store's.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { HlcTimestamp } from '../../crdt/hlc.ts'
import type { StoreContext } from '../context.ts'
import { encodeCheckpoint } from '../format/checkpoint.ts'
import { checkpointKey, logKey } from '../format/keys.ts'
import type { NameEntry } from '../names/entry.ts'
import { FULL_RETENTION_CHECKPOINTS } from '../options.ts'
import type { Unit } from '../pipeline/committer.ts'

/** A replica snapshot taken when the replica was exactly at `seq`. */
export interface TakenSnapshot {
  readonly seq: number
  readonly hlc: HlcTimestamp
  readonly snapshot: Uint8Array
}

/** The largest record delta or snapshot a name accepts back on reload: its replica's `limits.maxBytes`, if it has one. */
export function recordLimit(entry: NameEntry): number {
  return entry.replica.limits?.maxBytes ?? Number.POSITIVE_INFINITY
}

/** The replica's snapshot now, labelled with the name's last written seq (exact only when nothing of it is queued). */
function takeSnapshot(context: StoreContext, entry: NameEntry): TakenSnapshot {
  return { seq: entry.state.meta.lastSeq, hlc: context.clock.latest, snapshot: entry.replica.snapshot() }
}

/**
 * A unit that writes a checkpoint of `entry`, with the retention trim it
 * allows: of the snapshot `taken` at its seq (built in queue order, before
 * any later change of the name), or else snapshotted when built, last in
 * its batch, at the name's newest seq. Resolves with the checkpoint's seq
 * (the newest one when there was nothing to checkpoint).
 */
export function checkpointUnit(context: StoreContext, entry: NameEntry, taken?: TakenSnapshot): Unit<number> {
  const { state } = entry
  return {
    sync: entry.durability.mode === 'sync',
    states: [state],
    late: taken === undefined,
    build: (b) => {
      const meta = b.meta(state)
      const newest = meta.checkpoints.at(-1)?.seq ?? 0
      if (meta.lastSeq === 0 || meta.lastSeq === newest) return newest
      // A snapshot of another seq cannot be labelled with this one.
      if (taken && taken.seq !== meta.lastSeq) return newest
      const { hlc, snapshot } = taken ?? takeSnapshot(context, entry)
      if (snapshot.length > recordLimit(entry)) {
        // A checkpoint the replica would not load back is not written: the name keeps its log (each record within the limit).
        b.onCommit(() =>
          context.events.emit('error', {
            name: meta.name,
            error: new ConcordError(
              ErrorCodes.LIMIT_EXCEEDED,
              `"${meta.name}": its state of ${snapshot.length} bytes is over the limit of ${recordLimit(entry)} bytes a checkpoint loads back (limits.maxBytes): no checkpoint was written, the log is kept whole`,
            ),
          }),
        )
        return newest
      }
      const bytes = encodeCheckpoint({
        name: meta.name,
        type: meta.type,
        seq: meta.lastSeq,
        hash: meta.lastHash,
        schema: meta.schema,
        hlc,
        snapshot,
      })
      b.put(checkpointKey(meta.name, meta.lastSeq), bytes)
      const all = [...meta.checkpoints, { seq: meta.lastSeq, size: bytes.length }]
      const trims = typeof entry.retention === 'object' && 'checkpoints' in entry.retention
      const keep = trims ? Math.max(1, (entry.retention as { checkpoints: number }).checkpoints) : FULL_RETENTION_CHECKPOINTS
      let kept = all.slice(-keep)
      // The checkpoint just before the first retained record anchors the log (verify, at): kept while records after it are.
      const anchor = trims ? undefined : all.find((cp) => cp.seq === meta.firstSeq - 1)
      if (anchor && !kept.includes(anchor)) kept = [anchor, ...kept]
      for (const cp of all) if (!kept.includes(cp)) b.del(checkpointKey(meta.name, cp.seq))
      let firstSeq = meta.firstSeq
      if (trims && kept.length >= keep) {
        const trimTo = kept[0].seq
        for (let seq = meta.firstSeq; seq <= trimTo; seq++) b.del(logKey(meta.name, seq))
        firstSeq = Math.max(firstSeq, trimTo + 1)
      }
      b.setMeta(state, { ...meta, checkpoints: kept, firstSeq, logBytes: 0 })
      const seq = meta.lastSeq
      b.onCommit(() => {
        entry.checkpointed()
        context.events.emit('checkpoint', { name: meta.name, seq, size: bytes.length })
      })
      return seq
    },
  }
}

/**
 * Queues a checkpoint of `entry` (failures reported as `error` events):
 * snapshotted now when `now` (the replica must be exactly at its committed
 * seq), else last in the next batch.
 */
export function queueCheckpoint(context: StoreContext, entry: NameEntry, now = false): Promise<number> {
  entry.checkpointStarted()
  const promise = context.committer.enqueue(now ? checkpointUnit(context, entry, takeSnapshot(context, entry)) : checkpointUnit(context, entry))
  promise.then(
    () => entry.checkpointEnded(),
    (error) => {
      entry.checkpointEnded()
      context.events.emit('error', { name: entry.name, error })
    },
  )
  return promise
}

/** After records of `entry` were written: it has changes no checkpoint holds, and a checkpoint is queued when its policy says one is due. */
export function afterWrite(context: StoreContext, entry: NameEntry): void {
  entry.wrote(context.now())
  const meta = entry.state.meta
  const sinceCheckpoint = meta.lastSeq - (meta.checkpoints.at(-1)?.seq ?? 0)
  const { everyRecords, everyBytes } = entry.policy
  if ((everyRecords > 0 && sinceCheckpoint >= everyRecords) || (everyBytes > 0 && meta.logBytes >= everyBytes)) {
    if (entry.checkpointQueued) return
    // No change of the name queued since this batch: the replica is exactly
    // at its last seq, so the checkpoint can be taken at that seq, now.
    queueCheckpoint(context, entry, entry.state.pending === 0)
  }
}
