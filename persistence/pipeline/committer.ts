/**
 * The commit pipeline: every write of a store goes through one queue, and at
 * most one storage batch is in flight. Units that arrive while a batch is
 * being written go together into the next one (group commit), so concurrent
 * writers share one fsync. A batch is atomic: all of its units or none.
 *
 * Durability per unit: a `sync` unit resolves after its batch was written
 * with `sync: true` (fsynced); an async unit resolves after its batch reached
 * the OS (`sync: false`), and a flush is forced within `rpoMs`.
 *
 * Sequence numbers and hashes are assigned when a batch is built, not when a
 * unit is queued, so a failed batch leaves no hole: its units reject, the
 * in-memory metadata stays what was last written, and the next batch
 * continues from it.
 *
 * Appends update a name's metadata in memory only: the stored metadata is
 * rewritten only by units that call `setMeta` (creation, checkpoints,
 * truncation, migrations, TTL changes, close), and hydration derives the log
 * tail after it from the log itself (FORMAT.md). A plain append is then one
 * storage operation.
 */
import { Emitter } from '../../crdt/emitter.ts'
import { ConcordError, ErrorCodes, isConcordError } from '../../crdt/errors.ts'
import { BatchBuilder, type CommittedRecord } from './batch-builder.ts'
import type { NameState, StateDigester } from './name-state.ts'
import { metaKey, tailKey } from '../format/keys.ts'
import { encodeMeta, type NameMeta } from '../format/name-meta.ts'
import type { Storage, StorageOperation } from '../storage/storage.ts'
import { afterThisTurn } from '../turn.ts'

export { BatchBuilder, type AppendInput, type CommittedRecord } from './batch-builder.ts'
export { NameState } from './name-state.ts'

/** One unit of work: built into a batch, resolved when written per its mode. */
export interface Unit<T> {
  /** Wait for an fsync before resolving. */
  readonly sync: boolean
  /** Names the unit touches (kept from eviction while queued). */
  readonly states: readonly NameState[]
  /**
   * Build after the other units of the batch. A checkpoint unit sets this:
   * every change applied to a replica has its unit queued at once, and a
   * batch takes every queued unit, so a snapshot taken last in the batch is
   * exactly the state at the batch's last seq of the name.
   */
  readonly late?: boolean
  /** Adds the unit's operations; runs synchronously when the batch is formed. */
  build(builder: BatchBuilder): T
  /**
   * The unit logs changes its names' replicas hold in memory: when it fails
   * (a write error, or its build throws), those replicas are rolled back
   * (see {@link CommitterOptions.onFailure}).
   */
  readonly changes?: boolean
  /**
   * The unit takes more work ({@link Committer.join}) while it is the newest
   * unit queued and not yet taken into a batch: from when it is queued until
   * another unit is queued after it (then {@link superseded} is called) or
   * it is built.
   */
  readonly joinable?: boolean
  /** Called when a joinable unit stops taking work because another unit was queued after it. */
  superseded?(): void
}

/** Told of every batch the pipeline writes ({@link Committer.observeWrites}). */
export interface WriteObserver {
  /** The batch of `ops` is about to be written. */
  beforeWrite(ops: readonly StorageOperation[]): void
  /** That batch settled (written or failed). */
  afterWrite(): void
}

/** Events of the pipeline. */
export interface CommitterEvents extends Record<string, unknown> {
  /** Records written (in `sync` mode also durable). */
  commit: { readonly records: readonly CommittedRecord[] }
  /** Names whose records up to `seq` are now on stable storage. */
  durable: { readonly names: ReadonlyArray<{ readonly name: string; readonly seq: number }> }
  /** A batch failed; its units were rejected. */
  failure: { readonly error: ConcordError; readonly states: readonly NameState[] }
}

/**
 * Called when units that log in-memory changes failed (their batch could
 * not be written, or their build threw), with the error and the names of
 * those units. The pipeline waits for it before the next batch: no batch
 * runs while the store rolls those names back.
 */
export type FailureHandler = (error: ConcordError, states: ReadonlySet<NameState>) => Promise<void>

/** Timer functions (injectable for deterministic tests). */
export interface CommitTimers {
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
}

/** Node's timers, unref'd so a pending flush never keeps the process alive. */
export const realTimers: CommitTimers = {
  setTimeout(fn, ms) {
    const handle = setTimeout(fn, ms)
    ;(handle as { unref?: () => void }).unref?.()
    return handle
  },
  clearTimeout(handle) {
    clearTimeout(handle as ReturnType<typeof setTimeout>)
  },
}

/** Options of the pipeline. */
export interface CommitterOptions {
  /** Longest time a write of an async unit stays unsynced. */
  readonly rpoMs: number
  readonly timers?: CommitTimers
  /**
   * A batch takes queued units until its values reach this many bytes
   * (default 1 MiB); the rest wait for the next batch. A huge batch would
   * sit whole in LevelDB's write-ahead log, which the next open replays.
   * A late unit (checkpoint) waits too while a unit of its names does, so
   * its snapshot stays exact.
   */
  readonly maxBatchBytes?: number
  /** See {@link FailureHandler} (the store's rollback). */
  readonly onFailure?: FailureHandler
  /** Wall clock, ms (when the last fsync happened; default `Date.now`). */
  readonly now?: () => number
}

/** Resolves after the pending promise callbacks and I/O events have run. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => afterThisTurn(resolve))
}

interface Queued {
  readonly unit: Unit<unknown>
  /** The unit's names, and those added by {@link Committer.join} while it waits. */
  readonly states: NameState[]
  resolve(value: unknown): void
  reject(error: unknown): void
}

/** The commit pipeline of a store. */
export class Committer {
  readonly events = new Emitter<CommitterEvents>()
  private queue: Queued[] = []
  /** The joinable unit that may take more work (see {@link Unit.joinable}). */
  private open: Unit<unknown> | undefined
  private running: Promise<void> | undefined
  private readonly unsynced = new Set<NameState>()
  private timer: unknown
  private isClosed = false
  private readonly timers: CommitTimers
  private readonly maxBytes: number
  /** Number of batches written, and how many of them were fsynced (statistics). */
  readonly stats = { batches: 0, syncs: 0, units: 0 }
  private readonly writeObservers: WriteObserver[] = []
  private readonly metaObservers: Array<(meta: NameMeta) => void> = []
  /** When (wall clock, ms) the last fsynced batch was written; undefined: none since the store opened. */
  lastSyncAt: number | undefined

  constructor(
    private readonly storage: Storage,
    private readonly options: CommitterOptions,
  ) {
    this.timers = options.timers ?? realTimers
    this.maxBytes = options.maxBatchBytes ?? 1 << 20
  }

  /**
   * Rejects with `error` every queued unit (not yet taken into a batch)
   * that touches one of `states`, and those touching the names of those
   * units, and so on; returns every name they touch (`states` included).
   * Meant for the failure handler, while no batch runs.
   */
  refuseQueued(states: ReadonlySet<NameState>, error: ConcordError): Set<NameState> {
    const affected = new Set(states)
    const refused: Queued[] = []
    for (let grew = true; grew; ) {
      grew = false
      const kept: Queued[] = []
      for (const item of this.queue) {
        if (item.states.some((state) => affected.has(state))) {
          refused.push(item)
          for (const state of item.states)
            if (!affected.has(state)) {
              affected.add(state)
              grew = true
            }
        } else {
          kept.push(item)
        }
      }
      this.queue = kept
    }
    for (const item of refused) {
      if (this.open === item.unit) this.open = undefined
      this.release(item)
      if (this.deferred !== undefined) this.deferred.push(() => item.reject(error))
      else item.reject(error)
    }
    return affected
  }

  /** Tells `observer` of every batch: before it is written, and once it settled (the name owner's read-ahead drops what it touches). */
  observeWrites(observer: WriteObserver): void {
    this.writeObservers.push(observer)
  }

  /** Tells `observer` of every name metadata a batch wrote (`setMeta`), once the batch is written. */
  observeMetas(observer: (meta: NameMeta) => void): void {
    this.metaObservers.push(observer)
  }

  /** Queues a unit; resolves with what its `build` returned once written per its mode. */
  enqueue<T>(unit: Unit<T>): Promise<T> {
    if (this.isClosed) return Promise.reject(new ConcordError(ErrorCodes.CLOSED, 'the store is closed'))
    const open = this.open
    if (open !== undefined) {
      this.open = undefined
      open.superseded?.()
    }
    for (const state of unit.states) state.entered()
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ unit, states: [...unit.states], resolve: resolve as (value: unknown) => void, reject })
      if (unit.joinable === true) this.open = unit
      if (!this.running) this.running = this.run()
    })
  }

  /**
   * Lets more work join `unit` while it is the newest unit queued and not yet
   * taken into a batch: nothing queued after it can then be ordered before
   * what joins it. Adds `state` to its names (kept from eviction, counted
   * pending). Returns false when it is no longer waiting last in the queue
   * (the caller queues a new unit instead).
   */
  join(unit: Unit<unknown>, state: NameState): boolean {
    if (this.open !== unit) return false
    const last = this.queue.at(-1)
    if (last === undefined || last.unit !== unit) return false
    if (!last.states.includes(state)) {
      last.states.push(state)
      state.entered()
    }
    return true
  }

  /** Resolves once everything queued so far is written and fsynced. */
  async flush(): Promise<void> {
    await this.enqueue({ sync: true, states: [], build: () => undefined })
  }

  /** Resolves once everything queued so far is written (not necessarily fsynced). */
  async written(): Promise<void> {
    await this.enqueue({ sync: false, states: [], build: () => undefined })
  }

  /** Resolves once the queue is empty (nothing in flight). */
  async idle(): Promise<void> {
    while (this.running) await this.running
  }

  /** Flushes, then refuses further units. */
  async close(): Promise<void> {
    if (this.isClosed) return
    if (this.unsynced.size > 0 || this.queue.length > 0 || this.running) await this.flush().catch(() => undefined)
    await this.idle()
    this.isClosed = true
    if (this.timer !== undefined) this.timers.clearTimeout(this.timer)
    this.timer = undefined
  }

  private async run(): Promise<void> {
    try {
      let previous = 0
      for (;;) {
        // Writers released by a batch of several units queue their next
        // units from promise callbacks: let those run (one macrotask turn)
        // so they share the next batch instead of the first going alone.
        // A batch of async units alone waits for the end of the turn too:
        // no fsync holds the next batch back, so without it every unit
        // queued in one turn (the commits of every socket read in that
        // turn) would be a batch of its own. A sync unit goes at once
        // (an awaited writer waits for its fsync, and later units group
        // behind it).
        if (previous > 1 || (this.queue.length > 0 && this.queue.every((item) => !item.unit.sync))) await nextTurn()
        if (this.queue.length === 0) break
        const taken = this.queue
        this.queue = []
        previous = taken.length
        await this.writeBatch(taken)
      }
    } finally {
      this.running = undefined
    }
  }

  /** Builds units into a batch (up to the size limit; the rest go back to the front of the queue) and writes it. */
  private async writeBatch(taken: Queued[]): Promise<void> {
    const builder = new BatchBuilder()
    const built: Array<{ item: Queued; value: unknown }> = []
    /** Names of units that log in-memory changes and whose build threw, with the first such error. */
    const refused = new Set<NameState>()
    let refusal: ConcordError | undefined
    /** Rejections of failed units: run after the failure handler, so that a caller sees its names rolled back. */
    const rejections: Array<() => void> = []
    const build = (item: Queued): void => {
      if (this.open === item.unit) this.open = undefined
      const point = builder.savepoint()
      try {
        built.push({ item, value: item.unit.build(builder) })
      } catch (error) {
        builder.rollback(point)
        this.release(item)
        rejections.push(() => item.reject(error))
        if (item.unit.changes) {
          refusal ??= isConcordError(error) ? error : new ConcordError(ErrorCodes.INVALID_ARGUMENT, String(error), { cause: error })
          for (const state of item.states) refused.add(state)
        }
      }
    }
    const regular: Queued[] = []
    const late: Queued[] = []
    for (const item of taken) (item.unit.late ? late : regular).push(item)
    let cut = regular.length
    for (let i = 0; i < regular.length; i++) {
      if (i > 0 && builder.bytes >= this.maxBytes) {
        cut = i
        break
      }
      build(regular[i])
    }
    let leftover = regular.slice(cut)
    if (leftover.length > 0) {
      const waiting = new Set(leftover.flatMap((item) => item.states))
      const deferred = new Set<Queued>()
      for (const item of late) {
        if (item.states.some((state) => waiting.has(state))) deferred.add(item)
        else build(item)
      }
      // Back to the front of the queue, in their order.
      if (deferred.size > 0) {
        const rest = new Set(leftover)
        leftover = taken.filter((item) => rest.has(item) || deferred.has(item))
      }
      this.queue = leftover.concat(this.queue)
    } else {
      for (const item of late) build(item)
    }
    if (built.length === 0) {
      await this.failed(refusal, refused, rejections)
      return
    }
    const sync = built.some(({ item }) => item.unit.sync)
    const touched = builder.touched()
    const unitsIn = new Map<NameState, number>()
    for (const { item } of built) for (const state of item.states) unitsIn.set(state, (unitsIn.get(state) ?? 0) + 1)
    for (const state of builder.persisted()) {
      let meta = touched.get(state)!
      // Every unit queued for the name is in this batch: its replica is the state at the batch's lastSeq, digested with it.
      const digest = state.digester && unitsIn.get(state) === state.pending ? digestOrUndefined(state.digester) : undefined
      meta = { ...meta, digest: digest ? { seq: meta.lastSeq, bytes: digest } : undefined }
      touched.set(state, meta)
      builder.ops.push({ type: 'put', key: metaKey(meta.name), value: encodeMeta(meta) })
      // The metadata catches up with the log: its tail marker goes.
      if (state.metaBehind || builder.marks(state)) builder.ops.push({ type: 'del', key: tailKey(meta.name) })
    }
    for (const observer of this.writeObservers) observer.beforeWrite(builder.ops)
    try {
      await this.storage.batch(builder.ops, { sync })
    } catch (cause) {
      for (const observer of this.writeObservers) observer.afterWrite()
      const error = isConcordError(cause) ? cause : new ConcordError(ErrorCodes.STORAGE_ERROR, `write failed: ${(cause as Error)?.message}`, { cause })
      const states = [...new Set(built.flatMap(({ item }) => item.states))]
      for (const { item } of built) {
        this.release(item)
        rejections.push(() => item.reject(error))
        if (item.unit.changes) for (const state of item.states) refused.add(state)
      }
      this.events.emit('failure', { error, states })
      await this.failed(error, refused, rejections)
      return
    }
    for (const observer of this.writeObservers) observer.afterWrite()
    this.stats.batches++
    this.stats.units += built.length
    const persisted = builder.persisted()
    // forEach, not for-of: no [state, meta] pair per name.
    touched.forEach((meta, state) => {
      state.written(meta, persisted.has(state))
      this.unsynced.add(state)
      if (this.metaObservers.length > 0 && persisted.has(state)) for (const observer of this.metaObservers) observer(meta)
    })
    if (sync) this.markDurable()
    else this.scheduleFlush()
    // Released before the after-commit callbacks: there, `pending` counts only units queued since.
    for (const { item } of built) this.release(item)
    builder.runAfterCommit()
    if (builder.records.length > 0 && this.events.listenerCount('commit') > 0) this.events.emit('commit', { records: builder.records })
    for (const { item, value } of built) item.resolve(value)
    await this.failed(refusal, refused, rejections)
  }

  /**
   * Runs the failure handler (no batch runs meanwhile; its own failure is
   * reported by it, never thrown), then rejects the failed units and the
   * units it refused, so that their callers see the names rolled back.
   */
  private async failed(error: ConcordError | undefined, states: ReadonlySet<NameState>, rejections: Array<() => void>): Promise<void> {
    const outer = this.deferred
    this.deferred = rejections
    try {
      if (error !== undefined && states.size > 0 && this.options.onFailure !== undefined) await this.options.onFailure(error, states)
    } catch {
      // The handler reports what it could not roll back.
    } finally {
      this.deferred = outer
      for (const reject of rejections) reject()
    }
  }

  /** While the failure handler runs: rejections to run once it is done. */
  private deferred: Array<() => void> | undefined

  private release(item: Queued): void {
    for (const state of item.states) state.left()
  }

  private markDurable(): void {
    this.stats.syncs++
    this.lastSyncAt = (this.options.now ?? Date.now)()
    if (this.timer !== undefined) {
      this.timers.clearTimeout(this.timer)
      this.timer = undefined
    }
    const names: Array<{ name: string; seq: number }> = []
    for (const state of this.unsynced) {
      if (state.synced()) names.push({ name: state.meta.name, seq: state.durableSeq })
    }
    this.unsynced.clear()
    if (names.length > 0) this.events.emit('durable', { names })
  }

  private scheduleFlush(): void {
    if (this.timer !== undefined || this.unsynced.size === 0) return
    this.timer = this.timers.setTimeout(() => {
      this.timer = undefined
      if (this.isClosed) return
      this.flush().catch((error) => {
        // The failure event was emitted by writeBatch; retry within the window.
        if (!isConcordError(error, ErrorCodes.CLOSED)) this.scheduleFlush()
      })
    }, this.options.rpoMs)
  }
}

/** A replica's digest, or undefined when it cannot be computed (the metadata is then written without one). */
function digestOrUndefined(digester: StateDigester): Uint8Array | undefined {
  try {
    return digester.digest()
  } catch {
    return undefined
  }
}
