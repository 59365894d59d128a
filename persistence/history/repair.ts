/**
 * Repair of a name whose log is damaged in the middle (the case hydration
 * refuses with `CONCORD_CORRUPT_RECORD`; a torn tail is truncated on open
 * without help).
 *
 * The damaged record is lost, but the intact records after it need not be:
 * replayed from the start of the retained log, the intact records before the
 * damage are kept as they are, and every record after it that still
 * decodes and applies (a delta CRDT accepts a later delta without an earlier
 * one; a Yjs or Automerge document keeps what lacks its dependencies
 * waiting) is written again from the first damaged seq on, with its own
 * time, agent and delta, chained anew to the last intact record. One
 * atomic batch with the metadata (checkpoints at or after the cut are
 * dropped). The hash chain holds again, `at()` works, and peers fill in
 * what the damaged records held through anti-entropy. The seqs from the
 * cut on are renumbered.
 */
import { bytesEqual } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { Replica } from '../../crdt/replica.ts'
import type { StoreContext } from '../context.ts'
import { ZERO_HASH } from '../format/checksum.ts'
import { checkpointKey, logKey, logPrefix, parseSeqKey } from '../format/keys.ts'
import { decodeRecord, type StoredRecord } from '../format/record.ts'
import type { Names } from '../names/owner.ts'
import { loadCheckpoint } from '../names/replay.ts'
import { NameState } from '../pipeline/name-state.ts'
import type { SignalOptions, StorageKey } from '../storage/storage.ts'

/** What {@link repairName} did. */
export interface RepairReport {
  readonly name: string
  /** False when the log had no damage to repair (nothing was written). */
  readonly repaired: boolean
  /** First damaged seq: the log was cut there; the salvaged records follow from it. */
  readonly cutAt?: number
  /** Why the record at `cutAt` was damaged. */
  readonly reason?: string
  /** Records from the cut on that could not be used (the damaged one included). */
  readonly lostRecords?: number
  /** Intact records after the damage, written again after the cut. */
  readonly salvagedRecords?: number
}

function inUse(name: string): ConcordError {
  return new ConcordError(ErrorCodes.LOCKED, `"${name}" is open in this store: repair it from a store that has not opened it (concord repair)`)
}

/**
 * Repairs `name` (see the module comment). A name with damage only before
 * its newest checkpoint opens fine; it must not be open (hydrated) in this
 * store to be repaired (`CONCORD_LOCKED`).
 */
export async function repairName(context: StoreContext, names: Names, name: string, options: SignalOptions = {}): Promise<RepairReport> {
  context.checkOpen()
  const meta = await names.meta(name, { signal: options.signal, written: true })
  if (!meta) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}" does not exist`)
  const { storage } = context

  // The whole retained log is checked (damage before the newest checkpoint
  // breaks the audit trail even though the name opens): from the start when
  // nothing was trimmed, else from the oldest usable checkpoint.
  let replica: Replica | undefined
  let seq = 0
  let hash: Uint8Array = ZERO_HASH
  if (meta.firstSeq > 1) {
    for (const ref of meta.checkpoints) {
      if (ref.seq < meta.firstSeq - 1) continue
      const cp = await loadCheckpoint(storage, meta, ref.seq)
      if (!cp) continue
      try {
        replica = context.detachedReplica(meta.type, cp.snapshot)
      } catch {
        continue
      }
      seq = cp.seq
      hash = cp.hash
      break
    }
    if (!replica) {
      throw new ConcordError(
        ErrorCodes.CORRUPT_RECORD,
        `"${name}": no usable checkpoint and the log before seq ${meta.firstSeq} was trimmed: nothing to rebuild from (delete the name; peers resend it)`,
      )
    }
  } else {
    replica = context.detachedReplica(meta.type)
  }
  const base = seq

  // Replay: the intact prefix with its chain checked; after the damage, every record that still decodes and applies.
  let cut: { seq: number; hash: Uint8Array; reason: string } | undefined
  const kept: StoredRecord[] = []
  let failed = 0
  let iterated = 0
  let lastKeySeq = seq
  for await (const entry of storage.iterate({ prefix: logPrefix(name), gt: logKey(name, seq), signal: options.signal })) {
    const keySeq = parseSeqKey(entry.key[2] ?? '')
    if (Number.isNaN(keySeq)) continue
    lastKeySeq = Math.max(lastKeySeq, keySeq)
    iterated++
    if (cut === undefined && keySeq !== seq + 1) cut = { seq: seq + 1, hash, reason: `record ${seq + 1} is missing` }
    let record: StoredRecord
    try {
      record = decodeRecord(entry.value, { name, seq: keySeq, prevHash: cut === undefined ? hash : undefined })
      if (record.name !== name || record.seq !== keySeq) throw new Error(`record under seq ${keySeq} says "${record.name}" seq ${record.seq}`)
      if (cut === undefined && !bytesEqual(record.prevHash, hash)) throw new Error(`record ${keySeq} breaks the hash chain`)
      replica.applyDelta(record.delta)
    } catch (error) {
      if (isConcordError(error, ErrorCodes.UNSUPPORTED_VERSION)) throw error
      if (cut === undefined) cut = { seq: keySeq, hash, reason: (error as Error).message }
      failed++
      continue
    }
    if (cut === undefined) {
      seq = record.seq
      hash = record.hash
    } else {
      kept.push(record)
    }
  }
  if (cut === undefined && seq < meta.lastSeq) cut = { seq: seq + 1, hash, reason: `records ${seq + 1}..${meta.lastSeq} are missing` }
  if (cut === undefined) return { name, repaired: false }

  if (names.live(name) || names.hydrating(name)) throw inUse(name)
  const at = cut
  const doomed: StorageKey[] = []
  for await (const key of storage.keys({ prefix: logPrefix(name), gte: logKey(name, at.seq), signal: options.signal })) doomed.push(key)
  // metaBehind: the batch writes the metadata and deletes any tail marker the name had.
  const nameState = new NameState({ ...meta, lastSeq: at.seq - 1, lastHash: at.hash }, { metaBehind: true })
  const now = context.now()
  await context.committer.enqueue({
    sync: true,
    states: [nameState],
    build: (b) => {
      // Checked when the batch forms (synchronously): the log must not change under a hydrated replica.
      if (names.live(name) || names.hydrating(name)) throw inUse(name)
      for (const key of doomed) b.del(key)
      for (const cp of meta.checkpoints) if (cp.seq >= at.seq) b.del(checkpointKey(name, cp.seq))
      const checkpoints = meta.checkpoints.filter((cp) => cp.seq < at.seq)
      b.setMeta(nameState, { ...b.meta(nameState), checkpoints, logBytes: 0 })
      for (const record of kept)
        b.append(nameState, {
          delta: record.delta,
          hlc: record.hlc,
          agent: record.agent,
          kind: record.kind,
          message: record.message,
          metaJson: record.metaJson,
          authored: record.authored,
          signature: record.signature,
          now,
        })
    },
  })
  const report: RepairReport = {
    name,
    repaired: true,
    cutAt: at.seq,
    reason: at.reason,
    // Failed records, and seqs with no record at all.
    lostRecords: failed + Math.max(0, Math.max(meta.lastSeq, lastKeySeq) - base - iterated),
    salvagedRecords: kept.length,
  }
  context.events.emit('repaired', report)
  return report
}
