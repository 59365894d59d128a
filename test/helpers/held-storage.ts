/**
 * Storage wrappers whose durable writes the test holds back, so that "not
 * yet durable" is a state the test controls, not a race. Both wrap a real
 * engine (a memory-level or LevelDB storage).
 */
import type { RangeOptions, SignalOptions, Storage, StorageKey, StorageOperation, WriteOptions } from '../../persistence/storage/storage.ts'

/** Passes everything to `inner`; subclasses override the writes. */
class ForwardingStorage implements Storage {
  constructor(protected readonly inner: Storage) {}
  get kind(): string {
    return `held:${this.inner.kind}`
  }
  get closed(): boolean {
    return this.inner.closed
  }
  get(key: StorageKey, options?: SignalOptions): Promise<Uint8Array | undefined> {
    return this.inner.get(key, options)
  }
  batch(operations: readonly StorageOperation[], options?: WriteOptions): Promise<void> {
    return this.inner.batch(operations, options)
  }
  flush(options?: SignalOptions): Promise<void> {
    return this.inner.flush(options)
  }
  iterate(range: RangeOptions): AsyncIterable<{ key: StorageKey; value: Uint8Array }> {
    return this.inner.iterate(range)
  }
  keys(range: RangeOptions): AsyncIterable<StorageKey> {
    return this.inner.keys(range)
  }
  close(): Promise<void> {
    return this.inner.close()
  }
}

/** A storage whose writes (every batch, and flushes) wait, unwritten, while it is held: a peer that stops persisting. */
export class GatedStorage extends ForwardingStorage {
  private gate: Promise<void> | undefined
  private opened: (() => void) | undefined
  /** Writes that waited at the gate. */
  held = 0

  /** Holds every write from now on. */
  hold(): void {
    this.gate ??= new Promise((resolve) => {
      this.opened = resolve
    })
  }

  /** Lets the held writes through, and stops holding. */
  release(): void {
    this.opened?.()
    this.gate = undefined
  }

  override async batch(operations: readonly StorageOperation[], options?: WriteOptions): Promise<void> {
    if (this.gate) {
      this.held++
      await this.gate
    }
    return this.inner.batch(operations, options)
  }

  override async flush(options?: SignalOptions): Promise<void> {
    if (this.gate) {
      this.held++
      await this.gate
    }
    return this.inner.flush(options)
  }
}

/** A storage whose `sync` batches are written at once but resolve only when released, while `holding`: a held fsync. */
export class HeldSyncStorage extends ForwardingStorage {
  holding = false
  /** Sync batches written and not yet resolved. */
  readonly held: Array<() => void> = []
  /** Sync batches resolved (durable), in order. */
  durableBatches = 0

  override async batch(operations: readonly StorageOperation[], options?: WriteOptions): Promise<void> {
    await this.inner.batch(operations, options)
    if (!options?.sync) return
    if (this.holding) await new Promise<void>((resolve) => this.held.push(resolve))
    this.durableBatches++
  }

  /** Lets every held fsync complete, and stops holding. */
  release(): void {
    this.holding = false
    for (const resolve of this.held.splice(0)) resolve()
  }
}
