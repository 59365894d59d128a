/**
 * The causal context: the set of dots a replica has seen, kept compact as one
 * {@link RangeSet} per replica. Its leading range `1..n` is the classic
 * version-vector entry; the other ranges are the "dot cloud" (dots seen out
 * of order). Adding a dot that closes a gap folds it into the contiguous
 * part automatically, so the context is always compacted.
 */
import { MAX_AGENT_ID_LENGTH } from '../agent-id.ts'
import type { Decoder, Encoder } from '../codec.ts'
import { DecodeError } from '../errors.ts'
import { compareStrings, type Dot } from './dot.ts'
import { RangeSet } from './range-set.ts'

/** Largest dot counter accepted from the wire (far beyond any real history; keeps arithmetic exact). */
export const MAX_COUNTER = 2 ** 48

/** A set of dots, as per-replica ranges. */
export class CausalContext {
  private readonly byReplica: Map<string, RangeSet>

  constructor(byReplica: Map<string, RangeSet> = new Map()) {
    this.byReplica = byReplica
  }

  /** A context holding exactly the given dots. */
  static of(dots: Iterable<Dot>): CausalContext {
    const ctx = new CausalContext()
    for (const d of dots) ctx.add(d)
    return ctx
  }

  /** The replicas with at least one dot, in canonical (sorted) order. */
  replicas(): string[] {
    return [...this.byReplica.keys()].sort(compareStrings)
  }

  /** The dots of one replica (do not mutate), or undefined. */
  get(replica: string): RangeSet | undefined {
    return this.byReplica.get(replica)
  }

  /** Whether the context holds `d`. */
  has(d: Dot): boolean {
    return this.byReplica.get(d.replica)?.has(d.counter) ?? false
  }

  /** Adds a dot; returns true if it was new. */
  add(d: Dot): boolean {
    let set = this.byReplica.get(d.replica)
    if (!set) this.byReplica.set(d.replica, (set = new RangeSet()))
    return set.add(d.counter)
  }

  /** Removes a dot; returns true if it was there. */
  delete(d: Dot): boolean {
    const set = this.byReplica.get(d.replica)
    if (!set?.delete(d.counter)) return false
    if (set.isEmpty) this.byReplica.delete(d.replica)
    return true
  }

  /** Adds every counter of `set` for `replica`; returns true if anything was new. */
  addSet(replica: string, set: RangeSet): boolean {
    if (set.isEmpty) return false
    const mine = this.byReplica.get(replica)
    if (!mine) {
      this.byReplica.set(replica, set.clone())
      return true
    }
    const merged = mine.union(set)
    if (merged.equals(mine)) return false
    this.byReplica.set(replica, merged)
    return true
  }

  /** The next dot of `replica`: one past the largest counter seen from it. */
  next(replica: string): Dot {
    return { replica, counter: (this.byReplica.get(replica)?.max ?? 0) + 1 }
  }

  /** Joins `other` into this context in place; returns true if anything was new. */
  join(other: CausalContext): boolean {
    let changed = false
    for (const [replica, set] of other.byReplica) if (this.addSet(replica, set)) changed = true
    return changed
  }

  /** Removes every dot of `other` from this context, in place. */
  remove(other: CausalContext): void {
    for (const [replica, theirs] of other.byReplica) {
      const mine = this.byReplica.get(replica)
      if (!mine) continue
      const rest = mine.subtract(theirs)
      if (rest.isEmpty) this.byReplica.delete(replica)
      else this.byReplica.set(replica, rest)
    }
  }

  /** A new context: this ∪ other. */
  union(other: CausalContext): CausalContext {
    const out = this.clone()
    out.join(other)
    return out
  }

  /** A new context: this ∩ other. */
  intersect(other: CausalContext): CausalContext {
    const out = new Map<string, RangeSet>()
    for (const [replica, set] of this.byReplica) {
      const theirs = other.byReplica.get(replica)
      if (!theirs) continue
      const both = set.intersect(theirs)
      if (!both.isEmpty) out.set(replica, both)
    }
    return new CausalContext(out)
  }

  /** A new context: this \ other. */
  subtract(other: CausalContext): CausalContext {
    const out = new Map<string, RangeSet>()
    for (const [replica, set] of this.byReplica) {
      const theirs = other.byReplica.get(replica)
      const rest = theirs ? set.subtract(theirs) : set.clone()
      if (!rest.isEmpty) out.set(replica, rest)
    }
    return new CausalContext(out)
  }

  /** Every dot of this context is in `other`. */
  isSubsetOf(other: CausalContext): boolean {
    for (const [replica, set] of this.byReplica) {
      const theirs = other.byReplica.get(replica)
      if (!theirs || !set.isSubsetOf(theirs)) return false
    }
    return true
  }

  /** Same dots. */
  equals(other: CausalContext): boolean {
    if (this.byReplica.size !== other.byReplica.size) return false
    for (const [replica, set] of this.byReplica) {
      const theirs = other.byReplica.get(replica)
      if (!theirs || !set.equals(theirs)) return false
    }
    return true
  }

  /** True when the context holds no dot. */
  get isEmpty(): boolean {
    return this.byReplica.size === 0
  }

  /** Number of dots (may be huge for a long history: never iterate blindly). */
  get size(): number {
    let total = 0
    for (const set of this.byReplica.values()) total += set.size
    return total
  }

  /** Number of ranges over all replicas (the encoding cost). */
  get rangeCount(): number {
    let total = 0
    for (const set of this.byReplica.values()) total += set.rangeCount
    return total
  }

  /** The compacted version-vector part: replica -> n such that 1..n are all seen. */
  versionVector(): Map<string, number> {
    const out = new Map<string, number>()
    for (const replica of this.replicas()) {
      const n = this.byReplica.get(replica)!.contiguous
      if (n > 0) out.set(replica, n)
    }
    return out
  }

  /** The dot cloud: dots seen beyond the version vector (out of order). */
  *cloud(): IterableIterator<Dot> {
    for (const replica of this.replicas()) {
      const set = this.byReplica.get(replica)!
      const skip = set.contiguous
      for (const counter of set.values()) if (counter > skip) yield { replica, counter }
    }
  }

  /** Every dot, replica by replica (may be huge: check `size` first). */
  *dots(): IterableIterator<Dot> {
    for (const replica of this.replicas()) {
      for (const counter of this.byReplica.get(replica)!.values()) yield { replica, counter }
    }
  }

  /** A deep copy. */
  clone(): CausalContext {
    const out = new Map<string, RangeSet>()
    for (const [replica, set] of this.byReplica) out.set(replica, set.clone())
    return new CausalContext(out)
  }
}

/**
 * Writes a context: count of replicas, then per replica (sorted): id, range
 * count, and per range the gap since the previous range's end and the
 * length minus one.
 */
export function writeContext(encoder: Encoder, ctx: CausalContext): void {
  const replicas = ctx.replicas()
  encoder.writeVarUint(replicas.length)
  for (const replica of replicas) {
    encoder.writeString(replica)
    const flat = ctx.get(replica)!.flat
    encoder.writeVarUint(flat.length / 2)
    let previousEnd = 0
    for (let i = 0; i < flat.length; i += 2) {
      encoder.writeVarUint(flat[i] - previousEnd - 1)
      encoder.writeVarUint(flat[i + 1] - flat[i])
      previousEnd = flat[i + 1]
    }
  }
}

/**
 * Reads a context written by {@link writeContext}. Rejects (DecodeError)
 * anything not in canonical form: unsorted or repeated replicas, empty or
 * adjacent ranges, counters beyond {@link MAX_COUNTER}.
 */
export function readContext(decoder: Decoder): CausalContext {
  const count = decoder.readCount(3)
  const map = new Map<string, RangeSet>()
  let previousReplica: string | undefined
  for (let r = 0; r < count; r++) {
    const replica = decoder.readString()
    if (replica.length === 0 || replica.length > MAX_AGENT_ID_LENGTH) throw new DecodeError('context: bad agent id length')
    if (previousReplica !== undefined && !(previousReplica < replica)) throw new DecodeError('context: replicas not in canonical order')
    previousReplica = replica
    const ranges = decoder.readCount(2)
    if (ranges === 0) throw new DecodeError('context: replica without dots')
    const flat: number[] = []
    let previousEnd = 0
    for (let i = 0; i < ranges; i++) {
      const gap = decoder.readVarUint()
      if (i > 0 && gap === 0) throw new DecodeError('context: adjacent ranges')
      const start = previousEnd + 1 + gap
      const end = start + decoder.readVarUint()
      if (end > MAX_COUNTER) throw new DecodeError(`context: counter beyond ${MAX_COUNTER}`)
      flat.push(start, end)
      previousEnd = end
    }
    map.set(replica, new RangeSet(flat))
  }
  return new CausalContext(map)
}
