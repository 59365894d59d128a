/**
 * What the two counters share (gcounter.ts, pncounter.ts): each replica
 * keeps ONE live dot whose value is its cumulative total (PN: the pair
 * `{inc, dec}`); an increment is a new dot with the new total, whose delta's
 * context also holds the replica's old dot, so the old total is superseded
 * everywhere the delta goes. The value is the sum, over replicas, of the
 * total held by each replica's newest (highest-counter) live dot: an old
 * dot delivered after its successor is news to the context and joins the
 * store, but it never counts (anti-entropy removes it: the sender's
 * deltaSince lists it as removed).
 *
 * Inside an ORMap, removing the field removes the dots observed; an
 * increment concurrent with the removal keeps its full total (the
 * incrementing replica had not seen the removal).
 */
import type { DotEntry, DotFun } from '../causal/dot-store.ts'
import { ConcordError, ErrorCodes } from '../errors.ts'

/** Checks a mutator's amount: a positive safe integer. */
export function checkAmount(n: number): void {
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `counter: the amount must be a positive safe integer, got ${n}`)
  }
}

/** Checks a view's amount: a non-negative safe integer; 0 means "nothing to do". */
export function viewAmount(n: number): number {
  if (!Number.isSafeInteger(n) || n < 0)
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `counter: the amount must be a non-negative safe integer, got ${n}`)
  return n
}

/** Checks a new total stays a safe integer. */
export function checkTotal(total: number): void {
  if (!Number.isSafeInteger(total)) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'counter: total beyond 2^53-1')
}

/** The newest entry of each replica (entries are sorted by replica, then counter). */
export function newestPerReplica<V>(store: DotFun<V>): Array<DotEntry<V>> {
  const out: Array<DotEntry<V>> = []
  const entries = store.entries
  for (let i = 0; i < entries.length; i++) {
    if (i + 1 < entries.length && entries[i + 1].dot.replica === entries[i].dot.replica) continue
    out.push(entries[i])
  }
  return out
}

/** The newest live entry of `replica`, if any. */
export function newestOf<V>(store: DotFun<V>, replica: string): DotEntry<V> | undefined {
  let found: DotEntry<V> | undefined
  for (const e of store.entries) if (e.dot.replica === replica) found = e
  return found
}
