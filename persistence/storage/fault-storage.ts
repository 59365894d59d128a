/**
 * A fault-injecting {@link Storage} for tests: simulated power cuts (every
 * write not yet synced may be lost) and injected I/O errors.
 *
 * It keeps two in-memory engines: what the process sees, and what reached
 * "stable storage". A `sync` batch or `flush()` moves every earlier write to
 * stable storage, like LevelDB's fsync of its write-ahead log. `powerCut()`
 * keeps a prefix of the unsynced batches (LevelDB's log is append-only, so
 * what survives a cut is a prefix, each batch whole or absent) and returns a
 * fresh storage holding exactly what survived.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import type { LevelStorage } from './level/level-storage.ts'
import { openLevelStorage } from './level/open-level-storage.ts'
import type { RangeOptions, SignalOptions, Storage, StorageEntry, StorageKey, StorageOperation, WriteOptions } from './storage.ts'

/** Decides whether an operation fails: return an error to throw, or undefined. */
export type FaultRule = (operation: 'get' | 'batch' | 'flush' | 'iterate', detail: { readonly operations?: readonly StorageOperation[] }) => Error | undefined

/** A storage that can lose unsynced writes and fail on demand. */
export class FaultStorage implements Storage {
  readonly kind = 'fault-storage'
  /** Unsynced batches, oldest first. */
  private pending: StorageOperation[][] = []
  private isClosed = false
  /** Number of fsyncs (sync batches and flushes) that reached stable storage. */
  syncCount = 0
  /** Number of batches written. */
  batchCount = 0
  /** The injected fault rule; `undefined` = no faults. */
  fault: FaultRule | undefined

  private constructor(
    private readonly visible: LevelStorage,
    private readonly durable: LevelStorage,
  ) {}

  /** An empty fault storage. */
  static async create(): Promise<FaultStorage> {
    return new FaultStorage(await openLevelStorage(), await openLevelStorage())
  }

  get closed(): boolean {
    return this.isClosed
  }

  /** Number of batches written but not yet synced. */
  get unsyncedBatches(): number {
    return this.pending.length
  }

  private check(operation: 'get' | 'batch' | 'flush' | 'iterate', operations?: readonly StorageOperation[]): void {
    if (this.isClosed) throw new ConcordError(ErrorCodes.CLOSED, `${operation}: storage is closed`)
    const error = this.fault?.(operation, { operations })
    if (error) throw new ConcordError(ErrorCodes.STORAGE_ERROR, `${operation}: ${error.message}`, { cause: error })
  }

  async get(key: StorageKey, options?: SignalOptions): Promise<Uint8Array | undefined> {
    this.check('get')
    return this.visible.get(key, options)
  }

  async batch(operations: readonly StorageOperation[], options?: WriteOptions): Promise<void> {
    this.check('batch', operations)
    await this.visible.batch(operations, options)
    // The power went while the batch was being written: it is lost, and nothing acknowledges it.
    this.checkPower('batch')
    this.batchCount++
    this.pending.push([...operations])
    if (options?.sync) await this.moveToStable()
  }

  async flush(options?: SignalOptions): Promise<void> {
    this.check('flush')
    if (options?.signal?.aborted) throw new ConcordError(ErrorCodes.ABORTED, 'flush aborted')
    await this.moveToStable()
  }

  private checkPower(operation: string): void {
    if (this.isClosed) throw new ConcordError(ErrorCodes.STORAGE_ERROR, `${operation}: the power was cut during the write`)
  }

  private async moveToStable(): Promise<void> {
    const batches = this.pending
    this.pending = []
    // Synchronous with respect to powerCut(): the batches reach stable storage in one step.
    const stable = batches.flat()
    if (stable.length > 0) await this.durable.batch(stable)
    this.checkPower('sync')
    this.syncCount++
  }

  async *iterate(range: RangeOptions): AsyncIterable<StorageEntry> {
    this.check('iterate')
    yield* this.visible.iterate(range)
  }

  async *keys(range: RangeOptions): AsyncIterable<StorageKey> {
    this.check('iterate')
    yield* this.visible.keys(range)
  }

  async close(): Promise<void> {
    this.isClosed = true
  }

  /**
   * Cuts the power: this storage stops working, the first `keep` unsynced
   * batches (default: a random number of them, from `random`) survive, the
   * rest are lost. Returns a new storage with what survived.
   */
  async powerCut(options: { keep?: number; random?: () => number } = {}): Promise<FaultStorage> {
    this.isClosed = true
    const keep = options.keep ?? Math.floor((options.random ?? Math.random)() * (this.pending.length + 1))
    for (const ops of this.pending.slice(0, keep)) await this.durable.batch(ops)
    this.pending = []
    const visible = await openLevelStorage()
    const copy: StorageOperation[] = []
    for await (const entry of this.durable.iterate({ prefix: [] })) copy.push({ type: 'put', key: entry.key, value: entry.value })
    await visible.batch(copy)
    return new FaultStorage(visible, this.durable)
  }
}
