/**
 * Range-based set reconciliation (Meyer, "Range-Based Set Reconciliation";
 * the approach of Negentropy) over the sorted (name, state digest) items of
 * the names a remote may read: what two sides hold is compared by
 * fingerprints of ranges of names, split where they differ, so that `d`
 * differences among `n` names cost O(d log n) bytes instead of a VERSIONS
 * entry per name. See sync/PROTOCOL.md "Reconciliation".
 *
 * This module is the pure part: the item set, fingerprints, and one side's
 * answer to a RANGES message. sync/item-index.ts builds and keeps item sets;
 * sync/reconcile-session.ts runs a reconciliation in a session.
 */
import type { ReplicaType } from '../crdt/replica.ts'
import { HASH_BYTES, MAX_LIST_ITEMS, MAX_RANGES, type Range, type RangeItem } from './reconcile-codec.ts'

/** A range with more items than this on the side that would split it goes as its items instead. */
export const LIST_THRESHOLD = 16
/** A range whose fingerprints differ is split into this many. */
export const BRANCHES = 16

/** One name of a side's set. */
export interface Item {
  readonly name: string
  readonly type: ReplicaType
  /** First {@link HASH_BYTES} bytes of the state digest, as two little-endian words. */
  readonly h0: number
  readonly h1: number
}

/** Orders names by UTF-16 code units (the order of the protocol's ranges). */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/**
 * The items of one side, sorted by name, immutable: names, types and the
 * two hash words in columns. Range fingerprints are O(1) from prefix XORs
 * (built on the first fingerprint), so every round of a reconciliation
 * over 100,000 names costs its ranges, not its names.
 */
export class ItemSet {
  readonly names: readonly string[]
  readonly types: readonly ReplicaType[]
  readonly h0: Uint32Array
  readonly h1: Uint32Array
  private prefix0: Uint32Array | undefined
  private prefix1: Uint32Array | undefined
  private materialized: readonly Item[] | undefined

  /** A set of `items`, which must be sorted by name ({@link compareNames}) without duplicates. */
  constructor(items: readonly Item[])
  constructor(names: readonly string[], types: readonly ReplicaType[], h0: Uint32Array, h1: Uint32Array)
  constructor(itemsOrNames: readonly Item[] | readonly string[], types?: readonly ReplicaType[], h0?: Uint32Array, h1?: Uint32Array) {
    if (types && h0 && h1) {
      this.names = itemsOrNames as readonly string[]
      this.types = types
      this.h0 = h0
      this.h1 = h1
      return
    }
    const items = itemsOrNames as readonly Item[]
    this.names = items.map((item) => item.name)
    this.types = items.map((item) => item.type)
    this.h0 = Uint32Array.from(items, (item) => item.h0)
    this.h1 = Uint32Array.from(items, (item) => item.h1)
    this.materialized = items
  }

  /** How many items the set holds. */
  get size(): number {
    return this.names.length
  }

  /** The items as objects, in order (built on first use: tests and small sets). */
  get items(): readonly Item[] {
    this.materialized ??= this.names.map((_, i) => this.at(i))
    return this.materialized
  }

  /** The item at `index`. */
  at(index: number): Item {
    return { name: this.names[index], type: this.types[index], h0: this.h0[index], h1: this.h1[index] }
  }

  /** Index of `name`, or -1. */
  indexOf(name: string): number {
    const i = this.lowerIndex(name)
    return i < this.names.length && this.names[i] === name ? i : -1
  }

  /** The item of `name`, if the set holds it. */
  get(name: string): Item | undefined {
    const i = this.indexOf(name)
    return i < 0 ? undefined : this.at(i)
  }

  /** The type of `name`, if the set holds it. */
  typeOf(name: string): ReplicaType | undefined {
    const i = this.indexOf(name)
    return i < 0 ? undefined : this.types[i]
  }

  /** Index of the first item at or after `bound` (`null`: infinity). */
  lowerIndex(bound: string | null): number {
    if (bound === null) return this.names.length
    let lo = 0
    let hi = this.names.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.names[mid] < bound) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** The fingerprint of items `from..to-1`: XOR of their hashes, mixed with their count. */
  fingerprint(from: number, to: number): Uint8Array {
    if (!this.prefix0 || !this.prefix1) {
      const n = this.names.length
      const p0 = new Uint32Array(n + 1)
      const p1 = new Uint32Array(n + 1)
      for (let i = 0; i < n; i++) {
        p0[i + 1] = p0[i] ^ this.h0[i]
        p1[i + 1] = p1[i] ^ this.h1[i]
      }
      this.prefix0 = p0
      this.prefix1 = p1
    }
    const x0 = this.prefix0[to] ^ this.prefix0[from]
    const x1 = this.prefix1[to] ^ this.prefix1[from]
    const count = to - from
    return wordsToBytes((x0 ^ Math.imul(count, 0x9e3779b1)) >>> 0, (x1 ^ Math.imul(count + 1, 0x85ebca6b)) >>> 0)
  }

  /** The first {@link HASH_BYTES} bytes of the digest of the item at `index`. */
  hashAt(index: number): Uint8Array {
    return wordsToBytes(this.h0[index], this.h1[index])
  }

  /** Whether the item at `index` has the hash `hash`. */
  sameHashAt(index: number, hash: Uint8Array): boolean {
    return wordAt(hash, 0) === this.h0[index] && wordAt(hash, 4) === this.h1[index]
  }

  /** The items whose name `keep` accepts (this set itself when it accepts every one). */
  filter(keep: (name: string) => boolean): ItemSet {
    const kept: number[] = []
    for (let i = 0; i < this.names.length; i++) if (keep(this.names[i])) kept.push(i)
    if (kept.length === this.names.length) return this
    return new ItemSet(
      kept.map((i) => this.names[i]),
      kept.map((i) => this.types[i]),
      Uint32Array.from(kept, (i) => this.h0[i]),
      Uint32Array.from(kept, (i) => this.h1[i]),
    )
  }
}

function wordsToBytes(w0: number, w1: number): Uint8Array {
  const bytes = new Uint8Array(HASH_BYTES)
  const view = new DataView(bytes.buffer)
  view.setUint32(0, w0, true)
  view.setUint32(4, w1, true)
  return bytes
}

/** An item from a name, its type and its state digest. */
export function itemOf(name: string, type: ReplicaType, digest: Uint8Array): Item {
  return { name, type, h0: wordAt(digest, 0), h1: wordAt(digest, 4) }
}

/** The little-endian 32-bit word of `bytes` at `at`. */
function wordAt(bytes: Uint8Array, at: number): number {
  return (bytes[at] | (bytes[at + 1] << 8) | (bytes[at + 2] << 16) | (bytes[at + 3] << 24)) >>> 0
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** What a side learned from one RANGES message, besides its reply. */
export interface RoundOutcome {
  /** The reply's ranges (consecutive skips merged); every range a skip when this side has nothing more to say. */
  readonly reply: Range[]
  /** Names the other side holds with another digest than ours (both sides may lack something of them). */
  readonly differ: string[]
  /** Names the other side holds and we do not (the initiator asks for them). */
  readonly theyOnly: string[]
  /** Names we hold and the other side does not (it listed every item of their range). */
  readonly weOnly: string[]
}

/**
 * Answers one RANGES message from `set`: for each range, a skip when the
 * fingerprints match, our items when we hold few, else our items split in
 * {@link BRANCHES} fingerprinted ranges. An `all` list of the other side is
 * compared: names only we hold, names it holds with another digest (sent
 * back as `differ` by a responder, so that the initiator knows to ask),
 * names only it holds. A `differ` list names what the other side holds
 * differently. The reply is capped at {@link MAX_RANGES} ranges and
 * {@link MAX_LIST_ITEMS} items: ranges beyond go back as fingerprints of
 * whole ranges, the next round goes on from there.
 */
export function answerRanges(set: ItemSet, ranges: readonly Range[], role: 'initiator' | 'responder'): RoundOutcome {
  const reply: Range[] = []
  const differ: string[] = []
  const theyOnly: string[] = []
  const weOnly: string[] = []
  let listed = 0
  const push = (range: Range): void => {
    const last = reply[reply.length - 1]
    if (range.mode === 'skip' && last && last.mode === 'skip') reply[reply.length - 1] = range
    else reply.push(range)
  }
  let lower = 0
  for (const range of ranges) {
    const upper = set.lowerIndex(range.upper)
    const from = lower
    lower = upper
    if (range.mode === 'skip') {
      push({ mode: 'skip', upper: range.upper })
      continue
    }
    if (range.mode === 'differ') {
      for (const item of range.items) differ.push(item.name)
      push({ mode: 'skip', upper: range.upper })
      continue
    }
    if (range.mode === 'all') {
      const theirs = new Map<string, Uint8Array>()
      for (const item of range.items) theirs.set(item.name, item.hash)
      const mismatched: RangeItem[] = []
      for (let i = from; i < upper; i++) {
        const name = set.names[i]
        const hash = theirs.get(name)
        if (!hash) weOnly.push(name)
        else if (!set.sameHashAt(i, hash)) {
          differ.push(name)
          mismatched.push({ name, hash: set.hashAt(i) })
        }
      }
      for (const item of range.items) if (set.indexOf(item.name) < 0) theyOnly.push(item.name)
      // A responder tells the initiator which of its names differ here (it knows the rest now); an initiator has learned it all.
      if (role === 'responder' && mismatched.length > 0) {
        push({ mode: 'differ', items: mismatched, upper: range.upper })
        listed += mismatched.length
      } else push({ mode: 'skip', upper: range.upper })
      continue
    }
    // A fingerprint: equal, or say more.
    if (equalBytes(set.fingerprint(from, upper), range.fingerprint)) {
      push({ mode: 'skip', upper: range.upper })
      continue
    }
    const count = upper - from
    const room = reply.length + BRANCHES + 1 < MAX_RANGES && listed + LIST_THRESHOLD <= MAX_LIST_ITEMS
    if (!room) {
      // No room in this reply: the range goes back as one fingerprint (the other side compares and answers next round).
      push({ mode: 'fingerprint', fingerprint: set.fingerprint(from, upper), upper: range.upper })
      continue
    }
    if (count <= LIST_THRESHOLD) {
      const items: RangeItem[] = []
      for (let i = from; i < upper; i++) items.push({ name: set.names[i], hash: set.hashAt(i) })
      push({ mode: 'all', items, upper: range.upper })
      listed += items.length
      continue
    }
    const size = Math.ceil(count / BRANCHES)
    for (let start = from; start < upper; start += size) {
      const end = Math.min(upper, start + size)
      push({ mode: 'fingerprint', fingerprint: set.fingerprint(start, end), upper: end < upper ? set.names[end] : range.upper })
    }
  }
  return { reply, differ, theyOnly, weOnly }
}

/** Whether a reply says nothing more (every range a skip). */
export function settled(ranges: readonly Range[]): boolean {
  return ranges.every((range) => range.mode === 'skip')
}

/** The first message of a reconciliation: the whole set as one fingerprint, or its items when few. */
export function openingRanges(set: ItemSet): Range[] {
  const count = set.size
  if (count <= LIST_THRESHOLD) {
    return [{ mode: 'all', items: set.names.map((name, i) => ({ name, hash: set.hashAt(i) })), upper: null }]
  }
  return [{ mode: 'fingerprint', fingerprint: set.fingerprint(0, count), upper: null }]
}
