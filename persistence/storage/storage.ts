/**
 * The storage interface: what the log and the store need of a key-value
 * engine, and nothing more. Adapters move bytes only (docs/design-sketch.md, convention 2):
 * keys are paths of strings, values are `Uint8Array`s.
 *
 * Contract, for every implementation (checked by
 * `runStorageTests` of `concord-crdt/testing`, testing/storage-suite.ts):
 * - Keys are ordered segment by segment, each segment by its UTF-8 bytes;
 *   a path sorts before every path it is a prefix of (`['a'] < ['a', '']`).
 * - `batch` is atomic: after a crash either every operation of a batch is
 *   there or none is. With `sync: true` it resolves only once the batch and
 *   every write before it are on stable storage (fsync).
 * - `flush()` makes every write so far durable (one fsync).
 * - A failed write rejects with a {@link ConcordError} coded
 *   `CONCORD_STORAGE_ERROR` and changes nothing.
 * - `iterate` reads a consistent snapshot taken when it starts.
 * - Every operation after `close()` rejects with `CONCORD_CLOSED`.
 */
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'

/** A key: a path of string segments, e.g. `['l', 'plan', '00000000000001']`. */
export type StorageKey = readonly string[]

/** One operation of an atomic batch. */
export type StorageOperation =
  | { readonly type: 'put'; readonly key: StorageKey; readonly value: Uint8Array }
  | { readonly type: 'del'; readonly key: StorageKey }

/** A key with its value. */
export interface StorageEntry {
  readonly key: StorageKey
  readonly value: Uint8Array
}

/** Options every async operation takes. */
export interface SignalOptions {
  /** Aborts the operation (rejects with `CONCORD_ABORTED`). */
  readonly signal?: AbortSignal | undefined
}

/** Options of a write. */
export interface WriteOptions extends SignalOptions {
  /** fsync before resolving (the batch and every write before it). */
  readonly sync?: boolean | undefined
}

/**
 * A range of keys under `prefix` (the prefix itself excluded). The bounds are
 * full keys and further restrict the range.
 */
export interface RangeOptions extends SignalOptions {
  /** Only keys strictly under this path. */
  readonly prefix: StorageKey
  readonly gt?: StorageKey | undefined
  readonly gte?: StorageKey | undefined
  readonly lt?: StorageKey | undefined
  readonly lte?: StorageKey | undefined
  /** Newest (greatest) keys first. */
  readonly reverse?: boolean | undefined
  /** At most this many entries. */
  readonly limit?: number | undefined
}

/** A key-value storage engine behind Concord's persistence. */
export interface Storage {
  /** A short description, e.g. `classic-level:/path` or `memory-level`. */
  readonly kind: string
  /** The value at `key`, or `undefined`. */
  get(key: StorageKey, options?: SignalOptions): Promise<Uint8Array | undefined>
  /** Applies every operation atomically, in order. */
  batch(operations: readonly StorageOperation[], options?: WriteOptions): Promise<void>
  /** Makes every write so far durable (fsync). */
  flush(options?: SignalOptions): Promise<void>
  /** Entries in key order (or reverse) from a snapshot taken at the start. */
  iterate(range: RangeOptions): AsyncIterable<StorageEntry>
  /** Keys only (cheaper than {@link iterate} when values are large). */
  keys(range: RangeOptions): AsyncIterable<StorageKey>
  /** Closes the engine; idempotent. */
  close(): Promise<void>
  /** True once `close()` was called. */
  readonly closed: boolean
}

/** Throws `CONCORD_ABORTED` if the signal is aborted. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ConcordError(ErrorCodes.ABORTED, 'operation aborted', { cause: signal.reason })
}
