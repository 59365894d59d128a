/**
 * Local changes (of every name by default, `mergeLocal: 'all'`; of `async`
 * names only with `'async'`; a unit takes names of one durability mode), merged: a change joins the unit of the
 * previous one while that unit still waits last in the pipeline (a
 * joinable unit, persistence/pipeline/committer.ts), and the unit logs one
 * record per name whose delta is the type's merge of the deltas
 * (`mergeDeltas` of its replica factory), announced by one `committed`
 * event. Nothing is acknowledged earlier or later for it: every change is
 * in the batch it would have been in alone, and resolves with it.
 *
 * A replica with `openLocalRun` gives the merge itself: its first change in
 * the unit is taken as a delta, the later ones are collected by a run the
 * unit opens, closed when the unit stops taking changes (taken into a
 * batch, another unit queued after it, a unit being assembled, or the unit
 * full), so that the run holds exactly the changes the unit took and no
 * delta per change is encoded.
 */
import { ConcordError, ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import type { HlcTimestamp } from '../../crdt/hlc.ts'
import type { ChangeEvent, LocalRun } from '../../crdt/replica.ts'
import type { StoreContext } from '../context.ts'
import type { NameEntry } from '../names/entry.ts'
import type { BatchBuilder, CommittedRecord, Unit } from '../pipeline/committer.ts'
import type { LogItem } from './writes.ts'

/** Delta bytes beyond which a merging unit takes no more changes (the next change starts a new one). */
const MERGE_MAX_BYTES = 256 * 1024
/** Names beyond which a merging unit takes no changes of further names. */
const MERGE_MAX_NAMES = 64

/** The unit that local changes of `async` names join while it waits last in the pipeline. */
interface MergingUnit {
  readonly unit: Unit<CommittedRecord[]>
  /** The deltas of each name, in the order they were made (names in the order of their first change). */
  readonly deltas: Map<NameEntry, Uint8Array[]>
  /** The open local run of each name whose replica has one (its changes after the first). */
  readonly runs: Map<NameEntry, LocalRun>
  /** Time of the unit's first change: its records' HLC (earlier than anything queued after the unit). */
  readonly hlc: HlcTimestamp
  /** Whether the unit waits for an fsync (its names' mode: a unit takes names of one mode only). */
  readonly sync: boolean
  bytes: number
  /** Set once taken into a batch (built). */
  taken: boolean
}

/** What the merge needs of the write path. */
export interface MergeSink {
  /** Adds the records of `items` to a batch (see unit-records.ts). */
  buildAppends(b: BatchBuilder, items: readonly LogItem[]): CommittedRecord[]
  /** Queues a unit of changes; resolves once durable, then announced (`committed`). */
  enqueueUnit(unit: Unit<CommittedRecord[]>, entries: () => Iterable<NameEntry>): Promise<CommittedRecord[]>
  /** Reports a failed unit as `error` events of its names. */
  reportFailure(entries: readonly NameEntry[], error: unknown): void
}

/** @internal the merging of local changes of async names. */
export class LocalMerge {
  private merging: MergingUnit | undefined

  constructor(
    private readonly context: StoreContext,
    private readonly sink: MergeSink,
  ) {}

  /** Whether local changes of `entry` are merged (any name under `mergeLocal: 'all'`, the default; an async one under `'async'`), when its type has a merge. */
  merges(entry: NameEntry): boolean {
    return (entry.durability.mode === 'async' || (this.context.options.mergeLocal ?? 'all') === 'all') && this.context.mergerOf(entry.type) !== undefined
  }

  /** Ends the merging unit: it takes no more changes, and its runs are closed into deltas now. */
  end(): void {
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

  /** Adds a local change of a merged name to the merging unit, or queues a new one. */
  add(entry: NameEntry, event: ChangeEvent): void {
    const { committer } = this.context
    const open = this.merging
    if (open !== undefined && open.sync === (entry.durability.mode === 'sync')) {
      if (open.runs.has(entry)) {
        // Made while the unit's run of this name was open: the run holds it
        // (the unit is still last and waiting, else it would have ended).
        committer.join(open.unit, entry.state)
        if (!event.local) {
          // A remote delta applied to the replica directly is not in the run: logged beside it.
          const delta = event.delta
          open.deltas.get(entry)!.push(delta)
          open.bytes += delta.length
        }
        this.endIfFull(open)
        return
      }
      const list = open.deltas.get(entry)
      if ((list !== undefined || open.deltas.size < MERGE_MAX_NAMES) && committer.join(open.unit, entry.state)) {
        const delta = event.delta
        if (list !== undefined) list.push(delta)
        else this.addName(open, entry, delta)
        open.bytes += delta.length
        this.endIfFull(open)
        return
      }
    }
    const delta = event.delta
    const deltas = new Map([[entry, [delta]]])
    const sync = entry.durability.mode === 'sync'
    const merging: MergingUnit = {
      deltas,
      runs: new Map(),
      hlc: this.context.clock.now(),
      sync,
      bytes: delta.length,
      taken: false,
      unit: {
        sync,
        states: [entry.state],
        changes: true,
        joinable: true,
        superseded: () => {
          // Anything queued after the merging unit ends it (it could not be joined any more).
          if (this.merging === merging) this.merging = undefined
          this.closeRuns(merging)
        },
        build: (b) => {
          merging.taken = true
          // Taken into a batch: later changes go to a new unit.
          if (this.merging === merging) this.merging = undefined
          this.closeRuns(merging)
          return this.sink.buildAppends(b, this.mergedItems(merging))
        },
      },
    }
    // Queued first (which ends the previous merging unit), then opened to joins.
    this.sink.enqueueUnit(merging.unit, () => deltas.keys()).catch((error) => this.sink.reportFailure([...deltas.keys()], error))
    if (!merging.taken) {
      this.merging = merging
      this.openRun(merging, entry)
      this.endIfFull(merging)
    }
  }

  /** Adds a name's first change to a merging unit, and opens a run for its later ones if its replica has runs. */
  private addName(open: MergingUnit, entry: NameEntry, delta: Uint8Array): void {
    open.deltas.set(entry, [delta])
    this.openRun(open, entry)
  }

  private openRun(open: MergingUnit, entry: NameEntry): void {
    const run = entry.replica.openLocalRun?.()
    if (run !== undefined) open.runs.set(entry, run)
  }

  /** Ends the merging unit once it holds MERGE_MAX_BYTES: the next change starts a new one. */
  private endIfFull(open: MergingUnit): void {
    if (this.merging !== open) return
    let bytes = open.bytes
    for (const run of open.runs.values()) bytes += run.bytes
    if (bytes >= MERGE_MAX_BYTES) this.end()
  }

  /**
   * One item per name of a merging unit (in the order of their first
   * change): the merge of its deltas. A name whose deltas cannot be merged
   * keeps them as they are.
   */
  private mergedItems({ deltas, hlc }: MergingUnit): LogItem[] {
    const agent = this.context.agentId
    const items: LogItem[] = []
    for (const [entry, list] of deltas) {
      const merger = list.length > 1 ? this.context.mergerOf(entry.type) : undefined
      if (merger === undefined) {
        for (const delta of list) items.push({ entry, delta, hlc, agent })
        continue
      }
      try {
        items.push({ entry, delta: merger(list), hlc, agent })
      } catch (error) {
        // Not expected for deltas the replica made; log them one by one rather than lose them.
        this.context.events.emit('error', {
          name: entry.name,
          error: isConcordError(error) ? error : new ConcordError(ErrorCodes.INVALID_ARGUMENT, `merging deltas failed: ${String(error)}`),
        })
        for (const delta of list) items.push({ entry, delta, hlc, agent })
      }
    }
    return items
  }
}
