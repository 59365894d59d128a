/**
 * Registers as causal CRDTs (dot funs); a write is a new dot superseding
 * every observed dot, so after a join the store holds the writes that are
 * concurrent with each other.
 *
 * - MVRegister: the value is every concurrent value, distinct, sorted by
 *   canonical JSON (an empty array before the first write).
 * - LWWRegister: every write carries an HLC timestamp; the value is the
 *   write with the greatest `(hlc, replica id)` (then dot counter, then
 *   canonical JSON, for a total order even on forged input), or `null`
 *   before the first write. Concurrent losers stay in the store until the
 *   next write supersedes them (the join does not prune them, so it stays a
 *   plain dot-fun join).
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotFun, type DotEntry } from '../causal/dot-store.ts'
import { compareStamped, type HybridClock } from '../hlc.ts'
import type { DotAllocator } from './dot-allocator.ts'
import { canonicalJson, copyJson, type Json } from './json.ts'
import type { CausalState } from './state-codec.ts'
import type { LwwWrite } from './store-spec.ts'
import type { NativeTypeDef } from './type-def.ts'

/** The store of an MVRegister. */
export type MVRegisterStore = DotFun<Json>
/** The store of an LWWRegister. */
export type LWWRegisterStore = DotFun<LwwWrite>

/** The concurrent values, distinct, in canonical order. */
export function mvValues(store: MVRegisterStore): Json[] {
  const byText = new Map<string, Json>()
  for (const e of store.entries) byText.set(canonicalJson(e.value), e.value)
  return [...byText.keys()].sort().map((text) => JSON.parse(text) as Json)
}

/** Delta writing `values` (usually one; several restore a multi-value), superseding what was observed. */
export function mvWrite(store: MVRegisterStore, alloc: DotAllocator, values: readonly unknown[]): CausalState<MVRegisterStore> {
  const texts = [...new Set(values.map((v) => canonicalJson(v)))].sort()
  const entries = texts.map((text) => ({ dot: alloc.next(), value: JSON.parse(text) as Json }))
  const ctx = CausalContext.of([...entries.map((e) => e.dot), ...store.entries.map((e) => e.dot)])
  return { store: new DotFun(entries), ctx }
}

/** Delta clearing the register (removing the observed writes), or null when empty. */
export function registerClear<V>(store: DotFun<V>): CausalState<DotFun<V>> | null {
  if (store.entries.length === 0) return null
  return { store: new DotFun<V>(), ctx: CausalContext.of(store.entries.map((e) => e.dot)) }
}

/** The winning write of an LWW register, or undefined when empty. */
export function lwwWinner(store: LWWRegisterStore): DotEntry<LwwWrite> | undefined {
  let best: DotEntry<LwwWrite> | undefined
  for (const e of store.entries) {
    if (!best) {
      best = e
      continue
    }
    let order = compareStamped(e.value.hlc, e.dot.replica, best.value.hlc, best.dot.replica)
    if (order === 0) order = e.dot.counter - best.dot.counter
    if (order === 0) order = canonicalJson(e.value.value) < canonicalJson(best.value.value) ? -1 : 1
    if (order > 0) best = e
  }
  return best
}

/** The LWW register's value (a copy), or null when never written. */
export function lwwValue(store: LWWRegisterStore): Json {
  const winner = lwwWinner(store)
  return winner ? copyJson(winner.value.value) : null
}

/** Delta writing `value` at the clock's next timestamp, superseding what was observed. */
export function lwwWrite(store: LWWRegisterStore, alloc: DotAllocator, clock: HybridClock, value: unknown): CausalState<LWWRegisterStore> {
  const text = canonicalJson(value)
  for (const e of store.entries) clock.observe(e.value.hlc)
  const d = alloc.next()
  const write: LwwWrite = { hlc: clock.now(), value: JSON.parse(text) as Json }
  return { store: new DotFun([{ dot: d, value: write }]), ctx: CausalContext.of([d, ...store.entries.map((e) => e.dot)]) }
}

/** MVRegister behaviour. */
export const mvRegisterDef: NativeTypeDef<MVRegisterStore> = {
  tag: 'mv-register',
  empty: () => new DotFun<Json>(),
  value: mvValues,
  restore(current, past, alloc) {
    const want = mvValues(past)
    if (canonicalJson(want) === canonicalJson(mvValues(current))) return null
    return want.length === 0 ? registerClear(current) : mvWrite(current, alloc, want)
  },
}

/** LWWRegister behaviour. */
export const lwwRegisterDef: NativeTypeDef<LWWRegisterStore> = {
  tag: 'lww-register',
  empty: () => new DotFun<LwwWrite>(),
  value: lwwValue,
  restore(current, past, alloc, clock) {
    const want = lwwValue(past)
    const sameShape = (past.entries.length === 0) === (current.entries.length === 0)
    if (sameShape && canonicalJson(want) === canonicalJson(lwwValue(current))) return null
    return past.entries.length === 0 ? registerClear(current) : lwwWrite(current, alloc, clock, want)
  },
  observe(store, clock) {
    for (const e of store.entries) clock.observe(e.value.hlc)
  },
}
