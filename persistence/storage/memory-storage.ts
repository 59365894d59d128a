/**
 * The in-memory storage of a store opened without a folder: a persistent
 * (immutable) red-black tree of the encoded keys, so that an iteration reads
 * the tree as it was when it started (a snapshot for free) and a batch
 * applies by building the next tree and swapping it in at once (atomic).
 *
 * Keys are encoded as by the LevelDB adapter (key-codec.ts: order-preserving
 * bytes), each byte a character of a JavaScript string: string order is then
 * byte order, compared natively. It replaces memory-level behind the store,
 * whose abstract-level layers (transcoders, hooks, deferred open, events)
 * cost a remote keystroke about as much as the tree itself (issue 19).
 * Nothing is kept across a close: `flush` and `sync` only check the state.
 */
import createTree from 'functional-red-black-tree'
import { ConcordError, ErrorCodes } from '../../crdt/errors.ts'
import { encodeKey, rangeToBytes } from './level/key-codec.ts'
import {
  type RangeOptions,
  type SignalOptions,
  type Storage,
  type StorageEntry,
  type StorageKey,
  type StorageOperation,
  throwIfAborted,
  type WriteOptions,
} from './storage.ts'

type Tree<K, V> = createTree.Tree<K, V>

/** A stored entry: its key as given (copied) and its value. */
type Slot = readonly [StorageKey, Uint8Array]

/** Entries read per step of an iteration before the signal and the close are checked again. */
const STEP = 64

/** The key as a string whose code units are the bytes of {@link encodeKey} (string order = byte order). */
function keyString(key: StorageKey): string {
  let printable = true
  for (let i = 0; i < key.length && printable; i++) {
    const segment = key[i]
    if (typeof segment !== 'string') printable = false
    else
      for (let j = 0; j < segment.length; j++) {
        const code = segment.charCodeAt(j)
        if (code < 0x02 || code > 0x7f) {
          printable = false
          break
        }
      }
  }
  // Printable ASCII segments are their own bytes, each ended by 0x00.
  if (printable) return key.length === 0 ? '' : `${key.join('\u0000')}\u0000`
  return bytesString(encodeKey(key))
}

/** Each byte a character (no Buffer: the browser bundle has this module too). */
function bytesString(bytes: Uint8Array): string {
  let out = ''
  for (let i = 0; i < bytes.length; i += 4096) out += String.fromCharCode(...bytes.subarray(i, i + 4096))
  return out
}

/** An in-memory {@link Storage} (see the module comment). */
export class MemoryStorage implements Storage {
  readonly kind = 'memory'
  private tree: Tree<string, Slot> = createTree<string, Slot>()
  private isClosed = false

  get closed(): boolean {
    return this.isClosed
  }

  private check(what: string, signal?: AbortSignal): void {
    if (this.isClosed) throw new ConcordError(ErrorCodes.CLOSED, `${what}: storage is closed`)
    throwIfAborted(signal)
  }

  async get(key: StorageKey, options?: SignalOptions): Promise<Uint8Array | undefined> {
    this.check('get', options?.signal)
    return this.tree.get(keyString(key))?.[1]
  }

  async batch(operations: readonly StorageOperation[], options?: WriteOptions): Promise<void> {
    this.check('batch', options?.signal)
    // Every key is encoded (and checked) before anything changes: a refused key leaves the batch unapplied.
    const keys = operations.map((op) => keyString(op.key))
    let tree = this.tree
    for (let i = 0; i < operations.length; i++) {
      const op = operations[i]
      const at = tree.find(keys[i])
      if (op.type === 'put') {
        const slot: Slot = [op.key.slice(), op.value]
        tree = at.valid ? at.update(slot) : tree.insert(keys[i], slot)
      } else if (at.valid) tree = at.remove()
    }
    this.tree = tree
  }

  async flush(options?: SignalOptions): Promise<void> {
    this.check('flush', options?.signal)
  }

  async *iterate(range: RangeOptions): AsyncIterable<StorageEntry> {
    for await (const [key, value] of this.scan(range)) yield { key, value }
  }

  async *keys(range: RangeOptions): AsyncIterable<StorageKey> {
    for await (const [key] of this.scan(range)) yield key
  }

  private async *scan(range: RangeOptions): AsyncGenerator<Slot> {
    this.check('iterate', range.signal)
    let left = range.limit ?? -1
    if (left === 0) return
    const bounds = rangeToBytes(range)
    const lower = bounds.gte ?? bounds.gt!
    const upper = bounds.lte ?? bounds.lt!
    const low = bytesString(lower)
    const high = bytesString(upper)
    const lowInclusive = bounds.gte !== undefined
    const highInclusive = bounds.lte !== undefined
    // The tree as it is now: later batches build new trees and leave this one as it was.
    const tree = this.tree
    const reverse = range.reverse === true
    const at = reverse ? (highInclusive ? tree.le(high) : tree.lt(high)) : lowInclusive ? tree.ge(low) : tree.gt(low)
    for (;;) {
      const page: Slot[] = []
      while (page.length < STEP && at.valid && left !== 0) {
        const key = at.key!
        if (reverse ? key < low || (key === low && !lowInclusive) : key > high || (key === high && !highInclusive)) {
          left = 0
          break
        }
        page.push(at.value!)
        if (left > 0) left--
        if (reverse) at.prev()
        else at.next()
      }
      for (const slot of page) yield slot
      if (page.length < STEP || left === 0 || !at.valid) return
      this.check('iterate', range.signal)
    }
  }

  async close(): Promise<void> {
    this.isClosed = true
    this.tree = createTree<string, Slot>()
  }
}
