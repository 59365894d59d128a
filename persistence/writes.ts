/**
 * Writing: every change of a hydrated name (local, remote, migration) is
 * turned into log records through the commit pipeline; checkpoints by policy
 * are queued after the writes that trigger them.
 *
 * Changes made while a capture is open (`capture(fn)`) are collected instead
 * of being written one by one, so that `commit`, `atomic` and migrations log
 * all of them as one atomic unit.
 *
 * Local changes of `async` names (a replica's `change` outside a capture)
 * are merged: they join the unit of the previous one while it is still
 * waiting last in the pipeline, and that unit logs one record per name
 * whose payload is the type's merge of the deltas (`mergeDeltas` of its
 * replica factory), and is announced by one `committed` event. Nothing is
 * acknowledged earlier or later for it: every change is in the batch it
 * would have been in alone, and resolves with it. A replica with
 * `openLocalRun` gives the merge itself: its first change in the unit is
 * taken as a delta, the later ones are collected by a run the unit opens,
 * closed when the unit stops taking changes (taken into a batch, another
 * unit queued after it, a capture starting, or the unit full), so that the
 * run holds exactly the changes the unit took and no delta per change is
 * encoded. `sync` names, captures and
 * remote commits keep one record per change (an append of theirs resolves
 * when its own record is durable).
 */
import { ConcordError, ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { HlcTimestamp } from '../crdt/hlc.ts'
import type { ChangeEvent, LocalRun, ReplicaType, UndoRecord } from '../crdt/replica.ts'
import type { BatchBuilder, CommittedRecord, Unit } from './committer.ts'
import { encodeCheckpoint } from './format/checkpoint.ts'
import { checkpointKey, logKey } from './format/keys.ts'
import { FULL_RETENTION_CHECKPOINTS } from './options.ts'
import type { StoreCore } from './store-core.ts'
import type { ApplyResult, CaptureItem, Entry } from './store-types.ts'

/** Delta bytes beyond which a merging unit takes no more changes (the next change starts a new one). */
const MERGE_MAX_BYTES = 256 * 1024
/** Names beyond which a merging unit takes no changes of further names. */
const MERGE_MAX_NAMES = 64

/** The unit that local changes of `async` names join while it waits last in the pipeline. */
interface MergingUnit {
  readonly unit: Unit<CommittedRecord[]>
  /** The deltas of each name, in the order they were made (names in the order of their first change). */
  readonly deltas: Map<Entry, Uint8Array[]>
  /** The open local run of each name whose replica has one (its changes after the first). */
  readonly runs: Map<Entry, LocalRun>
  /** Time of the unit's first change: its records' HLC (earlier than anything queued after the unit). */
  readonly hlc: HlcTimestamp
  bytes: number
  /** Set once taken into a batch (built). */
  taken: boolean
  /** Settles with the unit (failures reported as `error` events): each entry's `last`. */
  settled: Promise<unknown>
}

/** A replica snapshot taken when the replica was exactly at `seq`. */
interface TakenSnapshot {
  readonly seq: number
  readonly hlc: HlcTimestamp
  readonly snapshot: Uint8Array
}

/** What an `atomic` block needs to take its changes back if it throws. */
interface BlockUndo {
  /** Per name touched: its undo record (none: the replica cannot undo) and its version before the block. */
  readonly records: Map<Entry, { readonly record: UndoRecord | undefined; readonly before: Uint8Array }>
}

/** The largest record payload a name accepts back on reload: its replica's `limits.maxBytes`, if it has one. */
function recordLimit(entry: Entry): number {
  return entry.replica.limits?.maxBytes ?? Number.POSITIVE_INFINITY
}

/** @internal the store's write path. */
export class Writes {
  private capturing: CaptureItem[] | undefined
  private merging: MergingUnit | undefined
  /** The innermost `atomic` block running, if any. */
  private block: BlockUndo | undefined
  /** A name whose replica's change events are not changes to log (a rollback in progress). */
  private silenced: Entry | undefined

  constructor(private readonly core: StoreCore) {
    // Anything queued after the merging unit ends it (it could not be joined any more).
    core.committer.beforeEnqueue = () => this.endMerging()
  }

  /**
   * The guard of a hydrated replica ({@link Replica.guard}): refuses local
   * changes of a name the store no longer persists (`CONCORD_CLOSED`), and
   * starts the undo record of a name an `atomic` block touches first.
   */
  guardOf(entry: Entry): () => void {
    return () => {
      if (entry.detached) {
        throw new ConcordError(ErrorCodes.CLOSED, this.core.isClosed
          ? `"${entry.name}": the store is closed; the change was refused`
          : `"${entry.name}" was expired, archived or deleted: open it again to change it`)
      }
      const block = this.block
      if (block !== undefined && !block.records.has(entry)) {
        block.records.set(entry, { before: entry.replica.version(), record: entry.replica.recordUndo?.() })
      }
    }
  }

  /** Runs `fn` with the change events of `entry` not logged (the store's own rollback of it). */
  silently<T>(entry: Entry, fn: () => T): T {
    const previous = this.silenced
    this.silenced = entry
    try {
      return fn()
    } finally {
      this.silenced = previous
    }
  }

  /** Ends the merging unit: it takes no more changes, and its runs are closed into deltas now. */
  endMerging(): void {
    const open = this.merging
    if (open === undefined) return
    this.merging = undefined
    this.closeRuns(open)
  }

  private closeRuns(open: MergingUnit): void {
    for (const [entry, run] of open.runs) {
      const delta = run.close()
      if (delta !== null) open.deltas.get(entry)!.push(delta)
    }
    open.runs.clear()
  }

  /** Runs `fn` and returns the changes it made (not written); captures nest. */
  capture(fn: (items: readonly CaptureItem[]) => void): CaptureItem[] {
    // Changes made in a capture are not the merging unit's.
    this.endMerging()
    const items: CaptureItem[] = []
    const previous = this.capturing
    this.capturing = items
    try {
      fn(items)
    } finally {
      this.capturing = previous
    }
    return items
  }

  /** The `change` listener of every hydrated replica. */
  onChange(entry: Entry, event: ChangeEvent): void {
    const { core } = this
    // A rollback, or a compensating change the store makes itself: nothing to log now.
    if (event.rollback === true || this.silenced === entry) return
    if (entry.detached) {
      core.events.emit('error', { name: entry.name, error: new ConcordError(ErrorCodes.CLOSED, `"${entry.name}" was expired, archived or the store closed: a change was not persisted`) })
      return
    }
    if (this.capturing === undefined && entry.durability.mode === 'async' && core.mergerOf(entry.state.meta.type) !== undefined) {
      entry.last = this.merge(entry, event)
      return
    }
    const item: CaptureItem = { entry, delta: event.delta, hlc: core.clock.now(), agent: core.replicaId }
    if (this.capturing) {
      this.capturing.push(item)
      return
    }
    const promise = this.enqueueItems([item])
    entry.last = promise.catch((error) => this.reportFailure([entry], error))
  }

  /** Adds a local change of an async name to the merging unit, or queues a new one; returns its settled promise. */
  private merge(entry: Entry, event: ChangeEvent): Promise<unknown> {
    const open = this.merging
    if (open !== undefined) {
      if (open.runs.has(entry)) {
        // Made while the unit's run of this name was open: the run holds it
        // (the unit is still last and waiting, else it would have ended).
        this.core.committer.join(open.unit, entry.state)
        if (!event.local) {
          // A remote delta applied to the replica directly is not in the run: logged beside it.
          const delta = event.delta
          open.deltas.get(entry)!.push(delta)
          open.bytes += delta.length
        }
        this.endIfFull(open)
        return open.settled
      }
      const list = open.deltas.get(entry)
      if ((list !== undefined || open.deltas.size < MERGE_MAX_NAMES) && this.core.committer.join(open.unit, entry.state)) {
        const delta = event.delta
        if (list !== undefined) list.push(delta)
        else this.addName(open, entry, delta)
        open.bytes += delta.length
        this.endIfFull(open)
        return open.settled
      }
    }
    const delta = event.delta
    const deltas = new Map([[entry, [delta]]])
    const merging: MergingUnit = {
      deltas, runs: new Map(), hlc: this.core.clock.now(), bytes: delta.length, settled: Promise.resolve(), taken: false,
      unit: {
        sync: false, states: [entry.state], changes: true,
        build: (b) => {
          merging.taken = true
          // Taken into a batch: later changes go to a new unit.
          if (this.merging === merging) this.merging = undefined
          this.closeRuns(merging)
          return this.buildAppends(b, this.mergedItems(merging))
        },
      },
    }
    // Queued first (which ends the previous merging unit), then opened to joins.
    merging.settled = this.enqueueUnit(merging.unit, () => deltas.keys()).catch((error) => this.reportFailure([...deltas.keys()], error))
    if (!merging.taken) {
      this.merging = merging
      this.openRun(merging, entry)
      this.endIfFull(merging)
    }
    return merging.settled
  }

  /** Adds a name's first change to a merging unit, and opens a run for its later ones if its replica has runs. */
  private addName(open: MergingUnit, entry: Entry, delta: Uint8Array): void {
    open.deltas.set(entry, [delta])
    this.openRun(open, entry)
  }

  private openRun(open: MergingUnit, entry: Entry): void {
    const run = entry.replica.openLocalRun?.()
    if (run !== undefined) open.runs.set(entry, run)
  }

  /** Ends the merging unit once it holds MERGE_MAX_BYTES: the next change starts a new one. */
  private endIfFull(open: MergingUnit): void {
    if (this.merging !== open) return
    let bytes = open.bytes
    for (const run of open.runs.values()) bytes += run.bytes
    if (bytes >= MERGE_MAX_BYTES) this.endMerging()
  }

  /**
   * One item per name of a merging unit (in the order of their first
   * change): the merge of its deltas. A name whose deltas cannot be merged
   * keeps them as they are.
   */
  private mergedItems({ deltas, hlc }: MergingUnit): CaptureItem[] {
    const agent = this.core.replicaId
    const items: CaptureItem[] = []
    for (const [entry, list] of deltas) {
      const merger = list.length > 1 ? this.core.mergerOf(entry.state.meta.type) : undefined
      if (merger === undefined) {
        for (const delta of list) items.push({ entry, delta, hlc, agent })
        continue
      }
      try {
        items.push({ entry, delta: merger(list), hlc, agent })
      } catch (error) {
        // Not expected for deltas the replica made; log them one by one rather than lose them.
        this.core.events.emit('error', { name: entry.name, error: isConcordError(error) ? error : new ConcordError(ErrorCodes.INVALID_ARGUMENT, `merging deltas failed: ${String(error)}`) })
        for (const delta of list) items.push({ entry, delta, hlc, agent })
      }
    }
    return items
  }

  private reportFailure(entries: readonly Entry[], error: unknown): void {
    const failure = isConcordError(error) ? error : new ConcordError(ErrorCodes.STORAGE_ERROR, String(error))
    for (const entry of entries) this.core.events.emit('error', { name: entry.name, error: failure })
  }

  /**
   * Adds the records of `items` to a batch: first, for a name rolled back
   * or undone in place by a compensating change (its replica holds structs
   * the log lacks), a `state` record of what the replica holds beyond the
   * logged state. A payload larger than the name's replica accepts back
   * (`limits.maxBytes`) is refused with `CONCORD_LIMIT_EXCEEDED` (the unit
   * fails and the name is rolled back): the store never writes a record it
   * could not load again.
   */
  buildAppends(b: BatchBuilder, items: readonly CaptureItem[]): CommittedRecord[] {
    const { core } = this
    const now = core.now()
    const records: CommittedRecord[] = []
    const repaired = new Map<Entry, Uint8Array>()
    for (const item of items) {
      const { entry } = item
      const since = entry.repairSince
      if (since !== undefined && !repaired.has(entry)) {
        repaired.set(entry, since)
        const beyond = entry.replica.deltaSince(since)
        if (beyond) records.push(b.append(entry.state, { payload: checkedPayload(entry, beyond), hlc: item.hlc, agent: core.replicaId, kind: 'state', now }))
      }
      records.push(b.append(entry.state, { payload: checkedPayload(entry, item.delta), hlc: item.hlc, agent: item.agent, now }))
    }
    const entries = new Set(items.map((item) => item.entry))
    b.onCommit(() => {
      for (const [entry, since] of repaired) if (entry.repairSince === since) entry.repairSince = undefined
      for (const entry of entries) this.afterWrite(entry)
    })
    return records
  }

  /** Writes `items` as one unit; resolves once durable per the names' modes, then emits `committed`. */
  enqueueItems(items: readonly CaptureItem[], origin?: unknown, create: readonly Entry[] = []): Promise<CommittedRecord[]> {
    const entries = [...new Set([...items.map((item) => item.entry), ...create])]
    return this.enqueueUnit({
      sync: entries.some((entry) => entry.durability.mode === 'sync'),
      states: entries.map((entry) => entry.state),
      changes: true,
      build: (b) => {
        const records = this.buildAppends(b, items)
        // Names the unit creates without a record of theirs (a delta that added nothing).
        for (const entry of create) if (entry.state.unborn) b.setMeta(entry.state, b.meta(entry.state))
        return records
      },
    }, () => entries, origin)
  }

  /**
   * Queues a unit that logs changes of `entries()` (read once written: a
   * merging unit's names grow while it waits); resolves once durable per
   * its mode, then emits `committed`.
   */
  private async enqueueUnit(unit: Unit<CommittedRecord[]>, entries: () => Iterable<Entry>, origin?: unknown): Promise<CommittedRecord[]> {
    const { core } = this
    const records = await core.committer.enqueue(unit)
    if (records.length > 0 && core.events.listenerCount('committed') > 0) {
      const types = new Map<string, ReplicaType>()
      for (const entry of entries()) types.set(entry.name, entry.state.meta.type)
      core.events.emit('committed', {
        origin,
        records: records.map((r) => ({ name: r.name, type: types.get(r.name)!, seq: r.seq, payload: r.payload })),
      })
    }
    return records
  }

  private afterWrite(entry: Entry): void {
    if (entry.dirtySince === 0) entry.dirtySince = this.core.now()
    const meta = entry.state.meta
    const sinceCheckpoint = meta.lastSeq - (meta.checkpoints.at(-1)?.seq ?? 0)
    const { everyRecords, everyBytes } = entry.policy
    if ((everyRecords > 0 && sinceCheckpoint >= everyRecords) || (everyBytes > 0 && meta.logBytes >= everyBytes)) {
      if (entry.checkpointQueued) return
      // No change of the name queued since this batch: the replica is exactly
      // at its last seq, so the checkpoint can be taken at that seq, now.
      this.queueCheckpoint(entry, entry.state.pending === 0)
    }
  }

  /**
   * Queues a checkpoint of `entry` (failures reported as `error` events):
   * snapshotted now when `now` (the replica must be exactly at its committed
   * seq), else last in the next batch.
   */
  queueCheckpoint(entry: Entry, now = false): Promise<number> {
    entry.checkpointQueued = true
    const promise = this.core.committer.enqueue(now ? this.checkpointUnit(entry, this.takeSnapshot(entry)) : this.checkpointUnit(entry))
    promise.then(() => { entry.checkpointQueued = false }, (error) => {
      entry.checkpointQueued = false
      this.core.events.emit('error', { name: entry.name, error })
    })
    return promise
  }

  private takeSnapshot(entry: Entry): TakenSnapshot {
    const { meta } = entry.state
    return { seq: meta.lastSeq, hlc: this.core.clock.latest, snapshot: entry.replica.snapshot() }
  }

  /**
   * A unit that writes a checkpoint of `entry`, with the retention trim it
   * allows: of the snapshot `taken` at its seq (built in queue order, before
   * any later change of the name), or else snapshotted when built, last in
   * its batch, at the name's newest seq.
   */
  checkpointUnit(entry: Entry, taken?: TakenSnapshot): Unit<number> {
    const { state } = entry
    return {
      sync: entry.durability.mode === 'sync', states: [state], late: taken === undefined,
      build: (b) => {
        const meta = b.meta(state)
        const newest = meta.checkpoints.at(-1)?.seq ?? 0
        if (meta.lastSeq === 0 || meta.lastSeq === newest) return newest
        // A snapshot of another seq cannot be labelled with this one.
        if (taken && taken.seq !== meta.lastSeq) return newest
        const { hlc, snapshot } = taken ?? this.takeSnapshot(entry)
        if (snapshot.length > recordLimit(entry)) {
          // A checkpoint the replica would not load back is not written: the name keeps its log (each record within the limit).
          b.onCommit(() => this.core.events.emit('error', { name: meta.name, error: new ConcordError(ErrorCodes.LIMIT_EXCEEDED, `"${meta.name}": its state of ${snapshot.length} bytes is over the limit of ${recordLimit(entry)} bytes a checkpoint loads back (limits.maxBytes): no checkpoint was written, the log is kept whole`) }))
          return newest
        }
        const bytes = encodeCheckpoint({
          name: meta.name, type: meta.type, seq: meta.lastSeq, hash: meta.lastHash, schema: meta.schema, hlc, snapshot,
        })
        b.put(checkpointKey(meta.name, meta.lastSeq), bytes)
        const all = [...meta.checkpoints, { seq: meta.lastSeq, size: bytes.length }]
        const keep = entry.retention === 'full' ? FULL_RETENTION_CHECKPOINTS : Math.max(1, entry.retention.checkpoints)
        const kept = all.slice(-keep)
        for (const cp of all.slice(0, all.length - kept.length)) b.del(checkpointKey(meta.name, cp.seq))
        let firstSeq = meta.firstSeq
        if (entry.retention !== 'full' && kept.length >= keep) {
          const trimTo = kept[0].seq
          for (let seq = meta.firstSeq; seq <= trimTo; seq++) b.del(logKey(meta.name, seq))
          firstSeq = Math.max(firstSeq, trimTo + 1)
        }
        b.setMeta(state, { ...meta, checkpoints: kept, firstSeq, logBytes: 0 })
        const seq = meta.lastSeq
        b.onCommit(() => {
          entry.dirtySince = 0
          this.core.events.emit('checkpoint', { name: meta.name, seq, size: bytes.length })
        })
        return seq
      },
    }
  }

  /**
   * Applies `deltas` to their (hydrated) entries and logs them as one unit.
   * With several deltas, every one is validated on a scratch replica first.
   */
  async commitDeltas(
    entries: readonly Entry[],
    deltas: ReadonlyArray<{ name: string; delta: Uint8Array }>,
    options: { origin?: unknown; agent?: string },
  ): Promise<ApplyResult[]> {
    const { core } = this
    if (deltas.length > 1) {
      // Validate all before applying any, so a bad delta cannot leave a partial change.
      for (const [i, item] of deltas.entries()) core.validateDelta(entries[i].state.meta.type, item.delta)
    } else {
      for (const [i, item] of deltas.entries()) core.checkDelta(entries[i].state.meta.type, item.delta)
    }
    const agent = options.agent ?? core.replicaId
    const changed: boolean[] = []
    const items = this.capture((captured) => {
      for (const [i, item] of deltas.entries()) {
        const before = captured.length
        const applied = entries[i].replica.applyDelta(item.delta, options.origin)
        changed.push(applied || captured.length > before)
      }
    })
    const stamped = items.map((item) => ({ ...item, agent }))
    // A name this commit creates is stored in the commit's batch, with its first records.
    const created = entries.filter((entry) => entry.state.unborn)
    const records = stamped.length > 0 || created.length > 0 ? await this.enqueueItems(stamped, options.origin, created) : []
    return entries.map((entry, i) => {
      const last = records.filter((r) => r.name === entry.name).at(-1)
      return { changed: changed[i], seq: last?.seq ?? entry.state.meta.lastSeq }
    })
  }

  /**
   * Runs `fn` (local mutations) and logs its changes as one unit. When `fn`
   * throws, every change it made is taken back (each name it touched undoes
   * them: exactly for native types and Automerge, by a compensating
   * transaction for a Yjs document, whose undone structs are logged with
   * its next change), nothing is logged or sent, and the error is rethrown.
   * The records name `agent` as their author (default: this replica).
   */
  async atomic(fn: () => void, agent?: string): Promise<ReadonlyArray<{ name: string; seq: number }>> {
    const block: BlockUndo = { records: new Map() }
    const outer = this.block
    this.block = block
    let captured: CaptureItem[]
    try {
      captured = this.capture(() => fn())
    } catch (error) {
      this.block = outer
      this.undoBlock(block)
      throw error
    }
    this.block = outer
    for (const { record } of block.records.values()) record?.release()
    if (captured.length === 0) return []
    const items = agent === undefined ? captured : captured.map((item) => ({ ...item, agent }))
    const records = await this.enqueueItems(items)
    return records.map((r) => ({ name: r.name, seq: r.seq }))
  }

  /** Takes back the changes of a block that threw, newest name first. */
  private undoBlock(block: BlockUndo): void {
    for (const [entry, { record, before }] of [...block.records].reverse()) {
      if (record === undefined) {
        // A replica that cannot undo: its changes stay, and are logged with its next change.
        entry.repairSince ??= before
        continue
      }
      const exact = record.undo()
      // A compensating change: the replica holds structs the log lacks, logged with the next change.
      if (!exact) entry.repairSince ??= before
    }
  }
}

/** `payload`, if the name's replica accepts it back on reload; else `CONCORD_LIMIT_EXCEEDED`. */
function checkedPayload(entry: Entry, payload: Uint8Array): Uint8Array {
  const limit = recordLimit(entry)
  if (payload.length > limit) {
    throw new ConcordError(ErrorCodes.LIMIT_EXCEEDED, `"${entry.name}": a change of ${payload.length} bytes is over the limit of ${limit} bytes its replica loads back (limits.maxBytes); it was refused and the name rolled back`)
  }
  return payload
}
