/**
 * GCounter and PNCounter as causal CRDTs (dot funs). Each replica keeps ONE
 * live dot whose value is its cumulative total (PN: the pair `{inc, dec}`);
 * an increment is a new dot with the new total, whose delta's context also
 * holds the replica's old dot, so the old total is superseded everywhere the
 * delta goes. The value is the sum, over replicas, of the total held by
 * each replica's newest (highest-counter) live dot: an old dot delivered
 * after its successor is news to the context and joins the store, but it
 * never counts (anti-entropy removes it: the sender's deltaSince lists it as
 * removed).
 *
 * Inside an ORMap, removing the field removes the dots observed; an
 * increment concurrent with the removal keeps its full total (the
 * incrementing replica had not seen the removal).
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotFun, type DotEntry } from '../causal/dot-store.ts'
import { ConcordError, ErrorCodes } from '../errors.ts'
import type { DotAllocator } from './dot-allocator.ts'
import type { CausalState } from './state-codec.ts'
import type { PnTotals } from './store-spec.ts'
import type { NativeTypeDef } from './type-def.ts'

/** The store of a GCounter. */
export type GCounterStore = DotFun<number>
/** The store of a PNCounter. */
export type PNCounterStore = DotFun<PnTotals>

function checkAmount(n: number): void {
  if (!Number.isSafeInteger(n) || n < 1) {
    throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, `counter: the amount must be a positive safe integer, got ${n}`)
  }
}

function checkTotal(total: number): void {
  if (!Number.isSafeInteger(total)) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'counter: total beyond 2^53-1')
}

/** The newest entry of each replica (entries are sorted by replica, then counter). */
function newestPerReplica<V>(store: DotFun<V>): Array<DotEntry<V>> {
  const out: Array<DotEntry<V>> = []
  const entries = store.entries
  for (let i = 0; i < entries.length; i++) {
    if (i + 1 < entries.length && entries[i + 1].dot.replica === entries[i].dot.replica) continue
    out.push(entries[i])
  }
  return out
}

/** The newest live entry of `replica`, if any. */
function newestOf<V>(store: DotFun<V>, replica: string): DotEntry<V> | undefined {
  let found: DotEntry<V> | undefined
  for (const e of store.entries) if (e.dot.replica === replica) found = e
  return found
}

/** The GCounter's value: the sum of each replica's newest total. */
export function gcounterValue(store: GCounterStore): number {
  let sum = 0
  for (const entry of newestPerReplica(store)) sum += entry.value
  return sum
}

/** Delta of `increment(n)` by `alloc.replica` (n >= 1). */
export function gcounterIncrement(store: GCounterStore, alloc: DotAllocator, n: number): CausalState<GCounterStore> {
  checkAmount(n)
  const own = store.entries.filter((e) => e.dot.replica === alloc.replica)
  const total = (newestOf(store, alloc.replica)?.value ?? 0) + n
  checkTotal(total)
  const d = alloc.next()
  return { store: new DotFun([{ dot: d, value: total }]), ctx: CausalContext.of([d, ...own.map((e) => e.dot)]) }
}

/** The PNCounter's value: increments minus decrements. */
export function pncounterValue(store: PNCounterStore): number {
  let sum = 0
  for (const entry of newestPerReplica(store)) sum += entry.value.inc - entry.value.dec
  return sum
}

/** Delta adding `inc` to the increments and `dec` to the decrements of `alloc.replica`. */
export function pncounterChange(store: PNCounterStore, alloc: DotAllocator, inc: number, dec: number): CausalState<PNCounterStore> {
  if (inc > 0) checkAmount(inc)
  if (dec > 0) checkAmount(dec)
  if (!(inc > 0 || dec > 0)) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'counter: nothing to change')
  const own = store.entries.filter((e) => e.dot.replica === alloc.replica)
  const newest = newestOf(store, alloc.replica)?.value
  const totals = { inc: inc + (newest?.inc ?? 0), dec: dec + (newest?.dec ?? 0) }
  checkTotal(totals.inc)
  checkTotal(totals.dec)
  const d = alloc.next()
  return { store: new DotFun([{ dot: d, value: totals }]), ctx: CausalContext.of([d, ...own.map((e) => e.dot)]) }
}

/** GCounter behaviour. */
export const gcounterDef: NativeTypeDef<GCounterStore> = {
  tag: 'gcounter',
  empty: () => new DotFun<number>(),
  value: gcounterValue,
  restore(current, past, alloc) {
    const diff = gcounterValue(past) - gcounterValue(current)
    if (diff === 0) return null
    if (diff < 0) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'gcounter: cannot go back to a smaller value')
    return gcounterIncrement(current, alloc, diff)
  },
}

/** PNCounter behaviour. */
export const pncounterDef: NativeTypeDef<PNCounterStore> = {
  tag: 'pncounter',
  empty: () => new DotFun<PnTotals>(),
  value: pncounterValue,
  restore(current, past, alloc) {
    const diff = pncounterValue(past) - pncounterValue(current)
    // A field at 0 inside a map must still exist: +1 -1 in one dot.
    if (diff === 0) return current.entries.length === 0 && past.entries.length > 0 ? pncounterChange(current, alloc, 1, 1) : null
    return diff > 0 ? pncounterChange(current, alloc, diff, 0) : pncounterChange(current, alloc, 0, -diff)
  },
}
