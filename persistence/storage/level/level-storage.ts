/**
 * The abstract-level adapter: one {@link Storage} over any abstract-level
 * database with `view` (Uint8Array) keys and values. `classic-level`
 * (LevelDB) on disk, `memory-level` in memory and `browser-level`
 * (IndexedDB) all go through it; their openers are
 * open-level-storage.ts (Node) and persistence/browser/.
 */
import type { AbstractLevel } from 'abstract-level'
import { ConcordError, ErrorCodes, isConcordError } from '../../../crdt/errors.ts'
import {
  throwIfAborted,
  type RangeOptions,
  type SignalOptions,
  type Storage,
  type StorageEntry,
  type StorageKey,
  type StorageOperation,
  type WriteOptions,
} from '../storage.ts'
import { decodeKey, encodeKey, rangeToBytes } from './key-codec.ts'
import { folderBytes, probeFolderSpace } from './space-probe.ts'

/** An abstract-level database with Uint8Array keys and values. */
export type BytesLevel = AbstractLevel<Uint8Array, Uint8Array, Uint8Array>

/** Reserved key (outside the path key space) written with `sync: true` by `flush()`. */
const SYNC_KEY = Uint8Array.of(0xff, 0x73, 0x79, 0x6e, 0x63)
const EMPTY = new Uint8Array(0)
/** Every key: path keys start at 0x00 or above, the reserved ones at 0xff. */
const WHOLE_RANGE = { start: Uint8Array.of(0), end: Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff) }
const PAGE = 256

/** Maps an abstract-level error to a ConcordError with a stable code. */
export function storageError(error: unknown, what: string): ConcordError {
  if (isConcordError(error)) return error
  const code = (error as { code?: string })?.code
  const causeCode = (error as { cause?: { code?: string } })?.cause?.code
  if (code === 'LEVEL_LOCKED' || causeCode === 'LEVEL_LOCKED') {
    return new ConcordError(ErrorCodes.LOCKED, `${what}: the data folder is held by another process`, { cause: error })
  }
  if (code === 'LEVEL_DATABASE_NOT_OPEN' && causeCode === undefined) {
    return new ConcordError(ErrorCodes.CLOSED, `${what}: the database is not open`, { cause: error })
  }
  return new ConcordError(ErrorCodes.STORAGE_ERROR, `${what}: ${(error as Error)?.message ?? String(error)}`, { cause: error })
}

function toView(bytes: Uint8Array): Uint8Array {
  // Node's Buffer is a Uint8Array; hand out a plain view over the same memory.
  return bytes.constructor === Uint8Array ? bytes : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/**
 * {@link Storage} over an abstract-level database.
 *
 * A failed write leaves a LevelDB handle unfit for more writes: LevelDB
 * records no error for a failed (non-sync) append to its log, but its log
 * writer has already advanced past the partial record, so the records it
 * appends next are misplaced and the next open drops them (measured on a
 * full 2 MiB tmpfs: a write acknowledged after space was freed was missing
 * from a copy of the folder and after a clean reopen). A failed fsync makes
 * LevelDB refuse every later write. So after a failed write (classic-level,
 * given its `dir`) the handle is closed and opened again before the next
 * write: the reopen recovers the log up to the last whole record and starts
 * a new one. Until there is room for a reopen ({@link probeSpace}) every
 * write fails with `CONCORD_STORAGE_ERROR`; reads keep using the old
 * handle, which holds exactly the writes that succeeded.
 */
export class LevelStorage implements Storage {
  private isClosed = false
  /** Set by a failed write: the handle is reopened before the next write. */
  private writeError: ConcordError | undefined
  /** Set when a reopen failed: the database is closed until one succeeds. */
  private down = false
  private reopening: Promise<void> | undefined

  /**
   * @param db an abstract-level database opened (or openable) with `view` encodings
   * @param kind description for messages
   * @param dir the LevelDB folder (classic-level): the handle is reopened after a failed write (see the class comment)
   */
  constructor(
    readonly db: BytesLevel,
    readonly kind: string,
    private readonly dir?: string,
  ) {}

  get closed(): boolean {
    return this.isClosed
  }

  private check(what: string, signal?: AbortSignal): void {
    if (this.isClosed) throw new ConcordError(ErrorCodes.CLOSED, `${what}: storage is closed`)
    throwIfAborted(signal)
  }

  /** Before a write: reopens the handle after a failed write (see the class comment). */
  private async writable(what: string): Promise<void> {
    if (this.writeError === undefined && !this.down) return
    if (this.dir === undefined) return
    if (!this.down) await this.probeSpace(what, this.dir)
    await this.reopen(what)
  }

  /**
   * Checks, before closing the handle, that a reopen has room: it writes
   * out what LevelDB's logs hold (as a level-0 table) and starts a new log
   * and manifest. So a file as large as the logs plus 64 KiB must fit
   * (written, fsynced, removed); else the write fails and the old handle
   * stays open for reads (the store rolls refused changes back from it).
   */
  private async probeSpace(what: string, dir: string): Promise<void> {
    try {
      await probeFolderSpace(dir)
    } catch (error) {
      throw new ConcordError(
        ErrorCodes.STORAGE_ERROR,
        `${what}: still failing after an earlier write error${this.writeError ? ` (${this.writeError.message})` : ''}: no room to reopen the database (${(error as Error)?.message ?? String(error)})`,
        { cause: error },
      )
    }
  }

  /** Before a read: opens the database again if a reopen failed. */
  private async readable(what: string): Promise<void> {
    if (this.down) await this.reopen(what)
  }

  private reopen(what: string): Promise<void> {
    this.reopening ??= (async () => {
      try {
        if (!this.down) {
          this.down = true
          await this.db.close()
        }
        await this.db.open()
        this.down = false
        this.writeError = undefined
      } catch (error) {
        const cause = this.writeError
        throw new ConcordError(
          ErrorCodes.STORAGE_ERROR,
          `${what}: the database could not be reopened after a failed write${cause ? ` (${cause.message})` : ''}: ${(error as Error)?.message ?? String(error)}`,
          { cause: error },
        )
      } finally {
        this.reopening = undefined
      }
    })()
    return this.reopening
  }

  /** Records a failed write and returns its error. */
  private failedWrite(error: unknown, what: string): ConcordError {
    const failure = storageError(error, what)
    if (failure.code === ErrorCodes.STORAGE_ERROR) this.writeError = failure
    return failure
  }

  /** Opens the underlying database (maps a held lock to `CONCORD_LOCKED`). */
  async open(): Promise<this> {
    try {
      await this.db.open()
    } catch (error) {
      throw storageError(error, `open ${this.kind}`)
    }
    return this
  }

  async get(key: StorageKey, options?: SignalOptions): Promise<Uint8Array | undefined> {
    this.check('get', options?.signal)
    await this.readable('get')
    try {
      const value = await this.db.get(encodeKey(key))
      return value === undefined ? undefined : toView(value)
    } catch (error) {
      throw storageError(error, 'get')
    }
  }

  async batch(operations: readonly StorageOperation[], options?: WriteOptions): Promise<void> {
    this.check('batch', options?.signal)
    if (operations.length === 0) {
      if (options?.sync) await this.flush(options)
      return
    }
    await this.writable('batch')
    const sync = options?.sync === true
    if (operations.length === 1) {
      // One operation is atomic by itself; put/del skip the batch object.
      const [op] = operations
      try {
        if (op.type === 'put') await this.db.put(encodeKey(op.key), op.value, { sync } as never)
        else await this.db.del(encodeKey(op.key), { sync } as never)
      } catch (error) {
        throw this.failedWrite(error, 'batch')
      }
      return
    }
    // A chained batch (one LevelDB WriteBatch, atomic like the array form)
    // costs about half as much per operation: the array form clones every
    // operation object and its options before encoding it.
    const batch = this.db.batch()
    try {
      for (const op of operations) {
        if (op.type === 'put') batch.put(encodeKey(op.key), op.value)
        else batch.del(encodeKey(op.key))
      }
    } catch (error) {
      await batch.close().catch(() => undefined)
      throw storageError(error, 'batch')
    }
    try {
      await batch.write({ sync } as never)
    } catch (error) {
      throw this.failedWrite(error, 'batch')
    }
  }

  async flush(options?: SignalOptions): Promise<void> {
    this.check('flush', options?.signal)
    await this.writable('flush')
    try {
      await this.db.put(SYNC_KEY, EMPTY, { sync: true } as never)
    } catch (error) {
      throw this.failedWrite(error, 'flush')
    }
  }

  async *iterate(range: RangeOptions): AsyncIterable<StorageEntry> {
    for await (const page of this.pages(range, true)) {
      for (const [key, value] of page) yield { key: decodeKey(key!), value: toView(value!) }
    }
  }

  async *keys(range: RangeOptions): AsyncIterable<StorageKey> {
    for await (const page of this.pages(range, false)) {
      for (const [key] of page) yield decodeKey(key!)
    }
  }

  /**
   * The range's entries as LevelDB hands them out, a page (up to
   * {@link PAGE} entries) at a time: {@link iterate} and {@link keys} yield
   * from the pages themselves, one async generator per entry rather than
   * two (each level costs promises and a result object per entry).
   */
  private async *pages(range: RangeOptions, values: boolean): AsyncGenerator<Array<[Uint8Array | undefined, Uint8Array | undefined]>> {
    this.check('iterate', range.signal)
    await this.readable('iterate')
    const limit = range.limit ?? -1
    if (limit === 0) return
    let iterator
    try {
      iterator = this.db.iterator({ ...rangeToBytes(range), reverse: range.reverse === true, limit, keys: true, values })
    } catch (error) {
      throw storageError(error, 'iterate')
    }
    try {
      // Entries still to read: once a limit is reached, no further call to find the end (a native round trip: ~30% of a 64-entry scan).
      let left = limit < 0 ? Number.POSITIVE_INFINITY : limit
      while (left > 0) {
        this.check('iterate', range.signal)
        let page: Array<[Uint8Array | undefined, Uint8Array | undefined]>
        try {
          page = await iterator.nextv(Math.min(PAGE, left))
        } catch (error) {
          throw storageError(error, 'iterate')
        }
        if (page.length === 0) return
        left -= page.length
        yield page
      }
    } finally {
      await iterator.close().catch(() => undefined)
    }
  }

  /**
   * Compacts the whole database when its folder holds at most `maxBytes`
   * and its logs at least `minLogBytes` and `minLogShare` of the folder
   * (classic-level with a folder only).
   * LevelDB leaves a session's log (every batch as written, uncompressed,
   * overwritten values included) for the next open to turn into a table;
   * compacting writes the live data only, compressed, and starts an empty
   * log. Resolves whether it compacted; never rejects (a failure leaves the
   * folder as LevelDB left it, which the next open recovers).
   */
  async compactIfSmall(options: { readonly maxBytes: number; readonly minLogBytes: number; readonly minLogShare: number }): Promise<boolean> {
    const db = this.db as BytesLevel & { compactRange?: (start: Uint8Array, end: Uint8Array) => Promise<void> }
    if (this.dir === undefined || this.isClosed || this.down || this.writeError !== undefined || typeof db.compactRange !== 'function') return false
    try {
      const { total, logs } = await folderBytes(this.dir)
      if (total > options.maxBytes || logs < options.minLogBytes || logs < total * options.minLogShare) return false
      // The first call writes the log out as a table, which LevelDB places at level 1 or 2, where a
      // manual compaction reaches a table only through an overlapping one of the level above. So the
      // first and the last key are written again (the same values) and the second call compacts their
      // level-0 table with every table below it: the values overwritten in the session are dropped.
      await db.compactRange(WHOLE_RANGE.start, WHOLE_RANGE.end)
      const [first] = await db.iterator({ limit: 1 }).all()
      if (first === undefined) return true
      await db.batch([
        { type: 'put', key: first[0], value: first[1] },
        { type: 'put', key: SYNC_KEY, value: (await db.get(SYNC_KEY)) ?? EMPTY },
      ])
      await db.compactRange(WHOLE_RANGE.start, WHOLE_RANGE.end)
      return true
    } catch {
      return false
    }
  }

  async close(): Promise<void> {
    if (this.isClosed) return
    this.isClosed = true
    await this.reopening?.catch(() => undefined)
    if (this.down) return
    try {
      await this.db.close()
    } catch (error) {
      throw storageError(error, 'close')
    }
  }
}
