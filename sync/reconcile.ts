/**
 * Range-based set reconciliation (Meyer, "Range-Based Set Reconciliation";
 * the approach of Negentropy) over the sorted (name, state digest) items of
 * the names a remote may read: what two sides hold is compared by
 * fingerprints of ranges of names, split where they differ, so that `d`
 * differences among `n` names cost O(d log n) bytes instead of a VERSIONS
 * entry per name. See sync/PROTOCOL.md "Reconciliation".
 *
 * This module is the pure part: the item set, fingerprints, and one side's
 * answer to a RANGES message. sync/reconcile-session.ts runs it in a session.
 */
import { stateDigest } from '../crdt/state-digest.ts'
import { ErrorCodes, isConcordError } from '../crdt/errors.ts'
import type { ReplicaType } from '../crdt/replica.ts'
import type { SyncHost } from './host.ts'
import { matchesFilter, type NameFilter } from './names.ts'
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

/** The items of one side, sorted by name. */
export class ItemSet {
  private readonly byName = new Map<string, Item>()

  constructor(readonly items: readonly Item[]) {
    for (const item of items) this.byName.set(item.name, item)
  }

  /** The item of `name`, if the set holds it. */
  get(name: string): Item | undefined {
    return this.byName.get(name)
  }

  /** Index of the first item at or after `bound` (`null`: infinity). */
  lowerIndex(bound: string | null): number {
    if (bound === null) return this.items.length
    let lo = 0
    let hi = this.items.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.items[mid].name < bound) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** The fingerprint of items `from..to-1`: XOR of their hashes, mixed with their count. */
  fingerprint(from: number, to: number): Uint8Array {
    let x0 = 0
    let x1 = 0
    for (let i = from; i < to; i++) {
      x0 ^= this.items[i].h0
      x1 ^= this.items[i].h1
    }
    const count = to - from
    return wordsToBytes((x0 ^ Math.imul(count, 0x9e3779b1)) >>> 0, (x1 ^ Math.imul(count + 1, 0x85ebca6b)) >>> 0)
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
  const view = new DataView(digest.buffer, digest.byteOffset, digest.byteLength)
  return { name, type, h0: view.getUint32(0, true), h1: view.getUint32(4, true) }
}

function hashOf(item: Item): Uint8Array {
  return wordsToBytes(item.h0, item.h1)
}

function sameHash(item: Item, hash: Uint8Array): boolean {
  const view = new DataView(hash.buffer, hash.byteOffset, hash.byteLength)
  return view.getUint32(0, true) === item.h0 && view.getUint32(4, true) === item.h1
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** Whether `error` says the host cannot read a name (gone, damaged, not held): the name is left out. */
function unreadable(error: unknown): boolean {
  return isConcordError(error, ErrorCodes.NOT_FOUND) || isConcordError(error, ErrorCodes.CORRUPT_RECORD)
}

/** The digest of a readable (held) name: the host's, or computed from its version. */
function digestOfHeld(host: SyncHost, name: string, type: ReplicaType): Uint8Array {
  const known = host.digest?.(name)
  if (known) return known
  const version = host.version(name)
  return stateDigest(name, type, version, host.deltaSince(name, version))
}

/**
 * The item set of the local names within `filter` that the remote may read
 * (`readable`): a name's digest from the host where it knows it without
 * loading the name (`SyncHost.digest`), else read from the name, held in
 * slices of `sliceNames` with a turn between them.
 */
export async function collectItems(host: SyncHost, filter: NameFilter, readable: (name: string) => boolean, sliceNames: number): Promise<ItemSet> {
  const items: Item[] = []
  const unknown: Array<{ name: string; type: ReplicaType }> = []
  for (const { name, type } of await host.list()) {
    if (!matchesFilter(filter, name) || !readable(name)) continue
    const digest = host.digest?.(name)
    if (digest) items.push(itemOf(name, type, digest))
    else unknown.push({ name, type })
  }
  for (let start = 0; start < unknown.length; start += sliceNames) {
    if (host.yieldTurn) await host.yieldTurn()
    const slice = unknown.slice(start, start + sliceNames)
    const release = host.hold ? await host.hold(slice.map((info) => info.name)) : undefined
    try {
      for (const { name, type } of slice) {
        try {
          items.push(itemOf(name, type, digestOfHeld(host, name, type)))
        } catch (error) {
          if (!unreadable(error)) throw error
        }
      }
    } finally {
      release?.()
    }
  }
  items.sort((a, b) => compareNames(a.name, b.name))
  return new ItemSet(items)
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
        const item = set.items[i]
        const hash = theirs.get(item.name)
        if (!hash) weOnly.push(item.name)
        else if (!sameHash(item, hash)) {
          differ.push(item.name)
          mismatched.push({ name: item.name, hash: hashOf(item) })
        }
      }
      for (const item of range.items) if (!set.get(item.name)) theyOnly.push(item.name)
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
      for (let i = from; i < upper; i++) items.push({ name: set.items[i].name, hash: hashOf(set.items[i]) })
      push({ mode: 'all', items, upper: range.upper })
      listed += items.length
      continue
    }
    const size = Math.ceil(count / BRANCHES)
    for (let start = from; start < upper; start += size) {
      const end = Math.min(upper, start + size)
      push({ mode: 'fingerprint', fingerprint: set.fingerprint(start, end), upper: end < upper ? set.items[end].name : range.upper })
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
  const count = set.items.length
  if (count <= LIST_THRESHOLD) {
    return [{ mode: 'all', items: set.items.map((item) => ({ name: item.name, hash: hashOf(item) })), upper: null }]
  }
  return [{ mode: 'fingerprint', fingerprint: set.fingerprint(0, count), upper: null }]
}
