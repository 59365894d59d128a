/**
 * Time travel and audit over a name's log: `history` (paged records),
 * `at` (the value as of a seq: nearest checkpoint + replay), `revert` (a new
 * forward change back to a past value), `changes` (catch-up then live
 * records), `verify` (hash chain, checkpoints and live state against a replay).
 */
import { signatureOf } from '../signing.ts'
import { bytesEqual } from '../../crdt/codec.ts'
import { ConcordError, ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { EncodedProvenance } from '../../crdt/provenance.ts'
import type { Replica } from '../../crdt/replica.ts'
import type { StoreContext } from '../context.ts'
import { ZERO_HASH } from '../format/checksum.ts'
import { decodeRecord } from '../format/record.ts'
import { type ScannedRecord, withChainHashes } from './chain-hashes.ts'
import type { NameMeta } from '../format/name-meta.ts'
import { logEntries, readSegmentIndex } from '../lifecycle/log-archive.ts'
import { lossProblem, readLosses } from '../lifecycle/seal.ts'
import type { Names } from '../names/owner.ts'
import { loadCheckpoint, rebuild } from '../names/replay.ts'
import { throwIfAborted, type SignalOptions } from '../storage/storage.ts'
import { sameState, toHistoryEntry, type HistoryEntry, type VerifyReport } from '../store-types.ts'
import type { Writes } from '../writes/writes.ts'

/** Records per page of `changes()` catch-up reads. */
const PAGE = 256

/** @internal history, at, revert, changes, verify. */
export class TimeTravel {
  constructor(
    private readonly context: StoreContext,
    private readonly names: Names,
    private readonly writes: Writes,
  ) {}

  /**
   * Records of `name`, oldest first from `from` (default: the first one
   * kept, archived ones included), at most `limit` (default 100); newest
   * first from `from` (default: the last) when `reverse`.
   */
  async history(name: string, options: { from?: number; limit?: number; reverse?: boolean } & SignalOptions = {}): Promise<HistoryEntry[]> {
    this.context.checkOpen()
    const meta = await this.names.meta(name, { signal: options.signal, mustExist: true })
    const limit = options.limit ?? 100
    const range = options.reverse
      ? { from: 1, to: Math.min(options.from ?? meta.lastSeq, meta.lastSeq), reverse: true, signal: options.signal }
      : { from: options.from ?? 1, to: meta.lastSeq, signal: options.signal }
    if (limit <= 0) return []
    const scanned: ScannedRecord[] = []
    for await (const entry of logEntries(this.context, meta, range)) {
      const record = decodeRecord(entry.value, { name, seq: entry.seq })
      if (record.name !== name || record.seq !== entry.seq) {
        throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${name}": record under seq ${entry.seq} is misplaced`)
      }
      scanned.push({ seq: entry.seq, value: entry.value, record })
      if (scanned.length >= limit) break
    }
    const hashed = await withChainHashes(this.context, meta, scanned, options.signal)
    return scanned.map(({ seq }) => {
      const record = hashed.get(seq)!
      return toHistoryEntry({ ...record }, signatureOf(this.context.signatures, record, meta.type))
    })
  }

  /**
   * The replica as it was right after record `seq` (0 = empty), rebuilt from
   * the nearest checkpoint at or before it, or replayed from the first
   * record (archived ones included) when there is none. A detached copy:
   * changing it changes nothing stored.
   */
  async at(name: string, seq: number, options: SignalOptions = {}): Promise<Replica> {
    this.context.checkOpen()
    const meta = await this.names.meta(name, { signal: options.signal, mustExist: true })
    if (!Number.isSafeInteger(seq) || seq < 0 || seq > meta.lastSeq) {
      throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `"${name}": seq ${seq} is outside 0..${meta.lastSeq}`)
    }
    const create = (snapshot?: Uint8Array): Replica => this.context.createReplica(meta.type, { agentId: this.context.agentId, snapshot })
    if (seq === 0) return create()
    const anchored = meta.firstSeq <= 1 || meta.checkpoints.some((cp) => cp.seq <= seq && cp.seq >= meta.firstSeq - 1)
    if (!anchored) return this.replayFromStart(meta, seq, create, options.signal)
    const merge = this.context.replayMergerOf(meta.type)
    const rebuilt = await rebuild({ storage: this.context.storage, meta, target: seq, allowTornTail: false, merge, signal: options.signal, create })
    return rebuilt.replica
  }

  /** Replays `meta`'s log from seq 1 (through its archive tier) to `target`, checking the chain; NOT_FOUND when records were deleted by retention. */
  private async replayFromStart(meta: NameMeta, target: number, create: () => Replica, signal?: AbortSignal): Promise<Replica> {
    const replica = create()
    let seq = 0
    let hash: Uint8Array = ZERO_HASH
    for await (const entry of logEntries(this.context, meta, { from: 1, to: target, signal })) {
      if (entry.seq !== seq + 1) break
      const record = decodeRecord(entry.value, { name: meta.name, seq: entry.seq, prevHash: hash })
      if (record.name !== meta.name || record.seq !== entry.seq || !bytesEqual(record.prevHash, hash)) {
        throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${meta.name}": record ${entry.seq} is misplaced or breaks the hash chain`)
      }
      replica.applyDelta(record.delta)
      seq = record.seq
      hash = record.hash
    }
    if (seq === target) return replica
    if (seq === 0) throw new ConcordError(ErrorCodes.NOT_FOUND, `"${meta.name}": seq ${target} was trimmed by retention`)
    throw new ConcordError(ErrorCodes.CORRUPT_RECORD, `"${meta.name}": record ${seq + 1} is missing`)
  }

  /**
   * Makes a new local change of `name` that brings its value back to what it
   * was at `seq`; it is logged and replicates like any change. Resolves with
   * the seq of the new record, or null when the value already equals it.
   */
  async revert(name: string, seq: number, options: SignalOptions & EncodedProvenance = {}): Promise<number | null> {
    this.context.checkOpen()
    const entry = await this.names.entry(name, undefined, { mustExist: true, signal: options.signal })
    const past = await this.at(name, seq, options)
    let delta: Uint8Array | null = null
    throwIfAborted(options.signal)
    const records = await this.writes.atomic(() => {
      delta = entry.replica.restore(past)
    }, options)
    return delta === null ? null : (records.filter((r) => r.name === name).at(-1)?.seq ?? null)
  }

  /**
   * The records of `name` from `since` (default: the first kept, archived ones included), then
   * live as new ones commit. Ends when `signal` aborts or the store closes.
   */
  async *changes(name: string, options: { since?: number } & SignalOptions = {}): AsyncGenerator<HistoryEntry> {
    this.context.checkOpen()
    const signal = options.signal
    const meta = await this.names.meta(name, { signal, mustExist: true })
    const archivedTier = meta.firstSeq > 1 && (await readSegmentIndex(this.context.storage, name)).length > 0
    const first = archivedTier ? 1 : meta.firstSeq
    let next = options.since ?? first
    if (next < first) {
      throw new ConcordError(ErrorCodes.NOT_FOUND, `"${name}": records before ${meta.firstSeq} were trimmed by retention`)
    }
    const buffer: HistoryEntry[] = []
    let wake: (() => void) | undefined
    const off = this.context.events.on('commit', (record) => {
      if (record.name !== name) return
      buffer.push(record)
      wake?.()
    })
    const onAbort = (): void => wake?.()
    signal?.addEventListener('abort', onAbort)
    this.context.waiters.add(onAbort)
    try {
      while (!signal?.aborted && !this.context.closed) {
        // Catch up from storage, then serve live records; a gap means we must read again.
        const page = await this.history(name, { from: next, limit: PAGE, signal }).catch((error) => {
          if (isConcordError(error, ErrorCodes.CLOSED) || isConcordError(error, ErrorCodes.ABORTED)) return undefined
          throw error
        })
        if (!page) return
        for (const record of page) {
          if (record.seq < next) continue
          yield record
          next = record.seq + 1
        }
        if (page.length === PAGE) continue
        let gap = false
        while (!gap && !signal?.aborted && !this.context.closed) {
          while (buffer.length > 0) {
            const record = buffer.shift()!
            if (record.seq < next) continue
            if (record.seq > next) {
              gap = true
              buffer.length = 0
              break
            }
            yield record
            next = record.seq + 1
          }
          if (gap || signal?.aborted || this.context.closed) break
          await new Promise<void>((resolve) => {
            wake = resolve
          })
          wake = undefined
        }
      }
    } finally {
      off()
      signal?.removeEventListener('abort', onAbort)
      this.context.waiters.delete(onAbort)
    }
  }

  /**
   * Checks `name`: every retained record's checksum, seq and hash chain, every
   * checkpoint against its record, and that replaying the log from the start
   * (where retained, else from the oldest checkpoint) gives each checkpoint's
   * state and the live state.
   */
  async verify(name: string, options: SignalOptions = {}): Promise<VerifyReport> {
    this.context.checkOpen()
    await this.context.committer.idle()
    const meta = await this.names.meta(name, { signal: options.signal, mustExist: true })
    const problems: string[] = []
    const create = (snapshot?: Uint8Array): Replica => this.context.createReplica(meta.type, { agentId: this.context.agentId, snapshot })
    const checkpoints = new Map<number, Replica | undefined>()
    const checkpointHashes = new Map<number, Uint8Array>()
    for (const ref of meta.checkpoints) {
      const cp = await loadCheckpoint(this.context.storage, meta, ref.seq)
      if (!cp) {
        problems.push(`checkpoint ${ref.seq} is missing or damaged`)
        continue
      }
      checkpointHashes.set(ref.seq, cp.hash)
      try {
        checkpoints.set(ref.seq, create(cp.snapshot))
      } catch (error) {
        problems.push(`checkpoint ${ref.seq} does not load: ${(error as Error).message}`)
      }
    }
    let replica: Replica
    let seq: number
    let hash: Uint8Array
    let from = meta.firstSeq
    const archived = meta.firstSeq > 1 ? await readSegmentIndex(this.context.storage, name).catch((error: Error) => error) : []
    if (archived instanceof Error) {
      problems.push(archived.message)
      return { name, ok: false, firstSeq: meta.firstSeq, lastSeq: meta.lastSeq, records: 0, checkpoints: meta.checkpoints.length, problems }
    }
    if (meta.firstSeq <= 1 || archived.length > 0) {
      // The whole log: the archive tier (which must reach the first record in LevelDB), then LevelDB.
      if (archived.length > 0 && archived.at(-1)!.toSeq !== meta.firstSeq - 1) {
        problems.push(`the archive tier ends at seq ${archived.at(-1)!.toSeq}, the log in the store starts at ${meta.firstSeq}`)
      }
      replica = create()
      seq = 0
      hash = ZERO_HASH
      from = 1
    } else {
      const anchor = meta.checkpoints.find((cp) => cp.seq === meta.firstSeq - 1)
      const cp = anchor && (await loadCheckpoint(this.context.storage, meta, anchor.seq))
      if (!cp) {
        problems.push(`no checkpoint at seq ${meta.firstSeq - 1} to anchor the retained log`)
        return { name, ok: false, firstSeq: meta.firstSeq, lastSeq: meta.lastSeq, records: 0, checkpoints: meta.checkpoints.length, problems }
      }
      replica = create(cp.snapshot)
      seq = cp.seq
      hash = cp.hash
    }
    let records = 0
    const signatures = { verified: 0, unbound: 0, unsigned: 0 }
    try {
      for await (const entry of logEntries(this.context, meta, { from, to: meta.lastSeq, signal: options.signal })) {
        const keySeq = entry.seq
        if (keySeq !== seq + 1) {
          problems.push(`record ${seq + 1} is missing`)
          break
        }
        try {
          const record = decodeRecord(entry.value, { name, seq: keySeq, prevHash: hash })
          if (record.name !== name || record.seq !== keySeq) throw new Error('misplaced record')
          if (!bytesEqual(record.prevHash, hash)) throw new Error('the hash chain is broken')
          replica.applyDelta(record.delta)
          seq = keySeq
          hash = record.hash
          records++
          const signature = signatureOf(this.context.signatures, record, meta.type)
          if (signature === undefined) signatures.unsigned++
          else if (signature.status === 'invalid') problems.push(`record ${keySeq}: its signature does not verify as author "${record.agent}"'s`)
          else signatures[signature.status]++
        } catch (error) {
          problems.push(`record ${keySeq}: ${(error as Error).message}`)
          break
        }
        const cpHash = checkpointHashes.get(seq)
        if (cpHash && !bytesEqual(cpHash, hash)) problems.push(`the hash chain at seq ${seq} differs from its checkpoint's`)
        const cpReplica = checkpoints.get(seq)
        if (checkpoints.has(seq) && cpReplica && !sameState(replica, cpReplica)) problems.push(`replaying to seq ${seq} differs from its checkpoint`)
      }
    } catch (error) {
      if (isConcordError(error, ErrorCodes.ABORTED) || isConcordError(error, ErrorCodes.CLOSED)) throw error
      problems.push((error as Error).message)
    }
    if (problems.length === 0 && seq !== meta.lastSeq) problems.push(`the log ends at ${seq}, the metadata says ${meta.lastSeq}`)
    if (problems.length === 0 && !bytesEqual(hash, meta.lastHash))
      problems.push("the hash chain does not reach the metadata's lastHash: the newest record hash differs from the metadata (a record was replaced)")
    const live = this.names.live(name)
    if (problems.length === 0 && live && live.state.pending === 0 && !sameState(replica, live.replica)) {
      problems.push('replaying the log differs from the live state')
    }
    const loss = (await readLosses(this.context.storage).catch(() => [])).find((l) => l.name === name)
    if (loss) problems.push(lossProblem(loss))
    return {
      name,
      ok: problems.length === 0,
      firstSeq: meta.firstSeq,
      lastSeq: meta.lastSeq,
      records,
      checkpoints: meta.checkpoints.length,
      problems,
      signatures,
    }
  }
}
