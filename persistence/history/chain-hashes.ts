/**
 * The hashes of records read out of their chain (a history page, newest
 * first or from the middle of a log). A version 4 record stores no link to
 * the record before it (persistence/format/record.ts): its hash is derived
 * from the previous record's, so a page that starts at seq `s` hashes
 * forward from the nearest anchor at or before `s - 1`: the metadata's
 * `lastHash`, a checkpoint's hash, or the empty log (seq 0). Records of
 * versions 1 to 3 hash alone and are anchors themselves.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { StoreContext } from '../context.ts'
import { ZERO_HASH } from '../format/checksum.ts'
import type { NameMeta } from '../format/name-meta.ts'
import { decodeRecord, RECORD_VERSION, recordHash, type StoredRecord, UNCHAINED } from '../format/record.ts'
import { logEntries } from '../lifecycle/log-archive.ts'
import { loadCheckpoint } from '../names/replay.ts'

/** A record as a page read it: its seq, stored bytes and decoded form. */
export interface ScannedRecord {
  readonly seq: number
  readonly value: Uint8Array
  readonly record: StoredRecord
}

/** The hash of record `seq` of `meta`'s log (ZERO_HASH for 0), hashed forward from the nearest anchor. */
export async function chainHashAt(context: StoreContext, meta: NameMeta, seq: number, signal?: AbortSignal): Promise<Uint8Array> {
  if (seq === 0) return ZERO_HASH
  if (seq === meta.lastSeq) return meta.lastHash
  let from = 0
  let hash: Uint8Array = ZERO_HASH
  const anchor = [...meta.checkpoints].reverse().find((cp) => cp.seq <= seq && cp.seq >= meta.firstSeq - 1)
  const cp = anchor && (await loadCheckpoint(context.storage, meta, anchor.seq))
  if (cp) {
    from = cp.seq
    hash = cp.hash
  }
  if (from === seq) return hash
  for await (const entry of logEntries(context, meta, { from: from + 1, to: seq, signal })) {
    if (entry.seq !== from + 1) break
    hash = decodeRecord(entry.value, { name: meta.name, seq: entry.seq, prevHash: hash }).hash
    from = entry.seq
  }
  if (from !== seq) throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${meta.name}": record ${from + 1} is missing (hashing the chain up to ${seq})`)
  return hash
}

/**
 * `scanned` (contiguous seqs, in any order) with every record's hash: the
 * ones read without their previous hash ({@link UNCHAINED}) get it from
 * {@link chainHashAt} of the lowest seq's predecessor. No work when none is.
 */
export async function withChainHashes(
  context: StoreContext,
  meta: NameMeta,
  scanned: readonly ScannedRecord[],
  signal?: AbortSignal,
): Promise<Map<number, StoredRecord>> {
  const out = new Map<number, StoredRecord>(scanned.map((s) => [s.seq, s.record]))
  const unchained = scanned.filter((s) => s.record.hash === UNCHAINED)
  if (unchained.length === 0) return out
  const ordered = [...scanned].sort((a, b) => a.seq - b.seq)
  const first = ordered.find((s) => s.record.hash === UNCHAINED)!
  const at = ordered.indexOf(first)
  // The hash before the first unchained record: the record before it in the page, or the chain.
  let prev = at > 0 && ordered[at - 1].seq === first.seq - 1 ? ordered[at - 1].record.hash : await chainHashAt(context, meta, first.seq - 1, signal)
  for (let i = at; i < ordered.length; i++) {
    const { seq, value, record } = ordered[i]
    if (i > at && seq !== ordered[i - 1].seq + 1)
      throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${meta.name}": record ${ordered[i - 1].seq + 1} is missing`)
    const hash = value[0] === RECORD_VERSION ? recordHash(value, meta.name, seq, prev) : record.hash
    if (record.hash === UNCHAINED) out.set(seq, { ...record, prevHash: prev, hash })
    prev = hash
  }
  return out
}
