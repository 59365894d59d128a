/**
 * A set of positive integers (dot counters of one replica) kept as sorted,
 * disjoint, non-adjacent inclusive ranges `[start, end]`, so contiguous runs
 * (the usual case: a version vector entry) cost two numbers.
 */

/** Sorted disjoint non-adjacent ranges of positive integers. */
export class RangeSet {
  /** Flat `[start0, end0, start1, end1, ...]`, sorted, with gaps of at least one between ranges. */
  private ranges: number[]

  constructor(ranges: number[] = []) {
    this.ranges = ranges
  }

  /** A set holding `1..n` (empty for `n <= 0`). */
  static upTo(n: number): RangeSet {
    return new RangeSet(n > 0 ? [1, n] : [])
  }

  /** Builds a set from counters in any order (duplicates allowed). */
  static from(counters: Iterable<number>): RangeSet {
    const sorted = [...counters].sort((a, b) => a - b)
    const out: number[] = []
    for (const n of sorted) {
      const last = out.length - 1
      if (last >= 0 && n <= out[last] + 1) {
        if (n > out[last]) out[last] = n
      } else {
        out.push(n, n)
      }
    }
    return new RangeSet(out)
  }

  /** Number of ranges. */
  get rangeCount(): number {
    return this.ranges.length / 2
  }

  /** Number of integers in the set. */
  get size(): number {
    let total = 0
    for (let i = 0; i < this.ranges.length; i += 2) total += this.ranges[i + 1] - this.ranges[i] + 1
    return total
  }

  /** True when the set holds nothing. */
  get isEmpty(): boolean {
    return this.ranges.length === 0
  }

  /** The largest member, or 0 when empty. */
  get max(): number {
    return this.ranges.length === 0 ? 0 : this.ranges[this.ranges.length - 1]
  }

  /** The `n` of the leading range `1..n` (the version-vector part), or 0. */
  get contiguous(): number {
    return this.ranges.length > 0 && this.ranges[0] === 1 ? this.ranges[1] : 0
  }

  /** The ranges as `[start, end]` pairs (a copy). */
  toPairs(): Array<[number, number]> {
    const out: Array<[number, number]> = []
    for (let i = 0; i < this.ranges.length; i += 2) out.push([this.ranges[i], this.ranges[i + 1]])
    return out
  }

  /** Raw flat ranges (read only). */
  get flat(): readonly number[] {
    return this.ranges
  }

  /** Every member in increasing order. */
  *values(): IterableIterator<number> {
    for (let i = 0; i < this.ranges.length; i += 2) {
      for (let n = this.ranges[i]; n <= this.ranges[i + 1]; n++) yield n
    }
  }

  /** Index (even) of the first range whose end >= n. */
  private search(n: number): number {
    let lo = 0
    let hi = this.ranges.length / 2
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.ranges[mid * 2 + 1] < n) lo = mid + 1
      else hi = mid
    }
    return lo * 2
  }

  /** Whether `n` is a member. */
  has(n: number): boolean {
    const last = this.ranges.length - 2
    if (last >= 0 && n > this.ranges[last + 1]) return false
    const i = this.search(n)
    return i < this.ranges.length && this.ranges[i] <= n
  }

  /** Adds `start..end` (inclusive); returns true if anything was new. */
  addRange(start: number, end: number): boolean {
    if (end < start) return false
    const r = this.ranges
    if (r.length === 0) {
      // The first range: an array of its two numbers (a push into an empty array reserves room for 17).
      this.ranges = [start, end]
      return true
    }
    // Fast path: append at the end.
    const last = r.length - 2
    if (start > r[last + 1] + 1) {
      r.push(start, end)
      return true
    }
    if (start >= r[last] && start <= r[last + 1] + 1) {
      if (end <= r[last + 1]) return false
      r[last + 1] = end
      return true
    }
    // General case: find the ranges touching [start - 1, end + 1] and merge them.
    const i = this.search(start - 1)
    let j = i
    let newStart = start
    let newEnd = end
    while (j < r.length && r[j] <= end + 1) {
      newStart = Math.min(newStart, r[j])
      newEnd = Math.max(newEnd, r[j + 1])
      j += 2
    }
    if (j - i === 2 && r[i] === newStart && r[i + 1] === newEnd) return false
    r.splice(i, j - i, newStart, newEnd)
    return true
  }

  /** Adds one member; returns true if it was new. */
  add(n: number): boolean {
    return this.addRange(n, n)
  }

  /** Removes one member; returns true if it was there. */
  delete(n: number): boolean {
    const i = this.search(n)
    const r = this.ranges
    if (i >= r.length || r[i] > n) return false
    const start = r[i]
    const end = r[i + 1]
    if (start === end) r.splice(i, 2)
    else if (n === start) r[i] = n + 1
    else if (n === end) r[i + 1] = n - 1
    else r.splice(i, 2, start, n - 1, n + 1, end)
    return true
  }

  /** A copy. */
  clone(): RangeSet {
    return new RangeSet(this.ranges.slice())
  }

  /** Same members. */
  equals(other: RangeSet): boolean {
    if (this.ranges.length !== other.ranges.length) return false
    for (let i = 0; i < this.ranges.length; i++) if (this.ranges[i] !== other.ranges[i]) return false
    return true
  }

  /** Every member of this set is in `other`. */
  isSubsetOf(other: RangeSet): boolean {
    let j = 0
    const o = other.ranges
    for (let i = 0; i < this.ranges.length; i += 2) {
      const start = this.ranges[i]
      const end = this.ranges[i + 1]
      while (j < o.length && o[j + 1] < start) j += 2
      if (j >= o.length || o[j] > start || o[j + 1] < end) return false
    }
    return true
  }

  /** A new set: this ∪ other. */
  union(other: RangeSet): RangeSet {
    const a = this.ranges
    const b = other.ranges
    const out: number[] = []
    let i = 0
    let j = 0
    const push = (start: number, end: number): void => {
      const last = out.length - 2
      if (last >= 0 && start <= out[last + 1] + 1) {
        if (end > out[last + 1]) out[last + 1] = end
      } else {
        out.push(start, end)
      }
    }
    while (i < a.length || j < b.length) {
      if (j >= b.length || (i < a.length && a[i] <= b[j])) {
        push(a[i], a[i + 1])
        i += 2
      } else {
        push(b[j], b[j + 1])
        j += 2
      }
    }
    return new RangeSet(out)
  }

  /** A new set: this ∩ other. */
  intersect(other: RangeSet): RangeSet {
    const a = this.ranges
    const b = other.ranges
    const out: number[] = []
    let i = 0
    let j = 0
    while (i < a.length && j < b.length) {
      const start = Math.max(a[i], b[j])
      const end = Math.min(a[i + 1], b[j + 1])
      if (start <= end) out.push(start, end)
      if (a[i + 1] < b[j + 1]) i += 2
      else j += 2
    }
    return new RangeSet(out)
  }

  /** A new set: this \ other. */
  subtract(other: RangeSet): RangeSet {
    const a = this.ranges
    const b = other.ranges
    const out: number[] = []
    let j = 0
    for (let i = 0; i < a.length; i += 2) {
      let start = a[i]
      const end = a[i + 1]
      while (j < b.length && b[j + 1] < start) j += 2
      let k = j
      while (k < b.length && b[k] <= end) {
        if (b[k] > start) out.push(start, b[k] - 1)
        start = Math.max(start, b[k + 1] + 1)
        k += 2
      }
      if (start <= end) out.push(start, end)
    }
    return new RangeSet(out)
  }
}
