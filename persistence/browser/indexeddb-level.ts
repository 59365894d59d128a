/**
 * browser-level (abstract-level over IndexedDB) with the two guarantees the
 * {@link Storage} contract asks for and browser-level does not give:
 *
 * - **Durability per write.** A write with `sync: true` (every batch of the
 *   store's `sync` mode, and `flush()`) runs in an IndexedDB transaction
 *   opened with `{ durability: 'strict' }`: the browser fires `complete`
 *   only once the changes are on persistent storage. Every other write is
 *   `'relaxed'`: `complete` once handed to the operating system (it survives
 *   the tab or the browser crashing, not a power cut). browser-level opens
 *   every transaction with the browser's default (relaxed in Chromium since
 *   121, in Firefox and Safari), whatever `sync` says.
 * - **Iteration from one snapshot.** browser-level reads each page of an
 *   iterator in its own transaction, so a write between two pages shows up
 *   half-way. Here an iterator reads its whole range (up to its `limit`) in
 *   one read-only transaction, which IndexedDB serves from one consistent
 *   state, and hands it out page by page: the range is held in memory for
 *   the iterator's life (the store reads one name's log after its last
 *   checkpoint, or one key prefix, at a time).
 */
import { BrowserLevel } from 'browser-level'
import { Iterator } from 'browser-level/iterator.js'

/** What is used of an IDBTransaction (transports/ and persistence/ compile without the DOM library). */
interface IdbTransaction {
  objectStore(name: string): IdbObjectStore
  commit?(): void
  abort(): void
  readonly error: unknown
  oncomplete: (() => void) | null
  onabort: (() => void) | null
}

interface IdbObjectStore {
  put(value: Uint8Array, key: Uint8Array): unknown
  delete(key: Uint8Array): unknown
}

interface IdbDatabase {
  transaction(stores: string[], mode: 'readwrite', options: { durability: 'strict' | 'relaxed' }): IdbTransaction
}

type Operation = { readonly type: 'put'; readonly key: Uint8Array; readonly value: Uint8Array } | { readonly type: 'del'; readonly key: Uint8Array }

/** The durability hint of a write: `strict` when it asked for `sync`, else `relaxed`. */
export function durabilityOf(options: { sync?: unknown } | undefined): 'strict' | 'relaxed' {
  return options?.sync === true ? 'strict' : 'relaxed'
}

/** An iterator that reads its whole range in one IndexedDB transaction (a snapshot), then pages through it. */
class SnapshotIterator extends Iterator<Uint8Array, Uint8Array> {
  private entries: Array<[Uint8Array | undefined, Uint8Array | undefined]> | undefined
  private offset = 0

  override async _nextv(size: number, options: unknown): Promise<Array<[Uint8Array | undefined, Uint8Array | undefined]>> {
    if (this.entries === undefined) {
      // browser-level reads everything in one transaction when asked for all of it.
      this.entries = await super._nextv(this.limit, options)
      this.offset = 0
    }
    const page = this.entries.slice(this.offset, this.offset + size)
    this.offset += page.length
    return page
  }

  async _next(): Promise<[Uint8Array | undefined, Uint8Array | undefined] | undefined> {
    const [entry] = await this._nextv(1, {})
    return entry
  }

  async _all(options: unknown): Promise<Array<[Uint8Array | undefined, Uint8Array | undefined]>> {
    return this._nextv(Infinity, options)
  }

  override _seek(target: Uint8Array, options: unknown): void {
    this.entries = undefined
    super._seek(target, options)
  }
}

/** browser-level with per-write durability and snapshot iteration (see the module comment). */
export class DurableBrowserLevel extends BrowserLevel<Uint8Array, Uint8Array> {
  /** Writes one batch of operations in one transaction with the write's durability. */
  private write(operations: readonly Operation[], options: { sync?: unknown } | undefined): Promise<void> {
    const db = (this as unknown as { readonly db: IdbDatabase }).db
    const transaction = db.transaction([this.location], 'readwrite', { durability: durabilityOf(options) })
    const store = transaction.objectStore(this.location)
    return new Promise<void>((resolve, reject) => {
      let error: unknown
      transaction.oncomplete = () => resolve()
      transaction.onabort = () => reject(error ?? transaction.error ?? new Error('IndexedDB transaction aborted'))
      try {
        // Requests of one transaction run in the order they are made.
        for (const op of operations) {
          if (op.type === 'put') store.put(op.value, op.key)
          else store.delete(op.key)
        }
        transaction.commit?.()
      } catch (thrown) {
        // A key or value IndexedDB cannot take: nothing of the batch is written.
        error = thrown
        transaction.abort()
      }
    })
  }

  async _put(key: Uint8Array, value: Uint8Array, options: { sync?: unknown }): Promise<void> {
    await this.write([{ type: 'put', key, value }], options)
  }

  async _del(key: Uint8Array, options: { sync?: unknown }): Promise<void> {
    await this.write([{ type: 'del', key }], options)
  }

  async _batch(operations: readonly Operation[], options: { sync?: unknown }): Promise<void> {
    if (operations.length === 0) return
    await this.write(operations, options)
  }

  _iterator(options: unknown): object {
    return new SnapshotIterator(this, this.location, options)
  }
}
