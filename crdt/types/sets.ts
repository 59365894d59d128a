/**
 * GSet and ORSet (add-wins, observed-remove) as causal CRDTs: a dot map
 * from element (its canonical JSON text) to the dot set of the adds that
 * are live for it.
 *
 * - ORSet add(e): `{e: {new dot}}`, context `{new dot} ∪ dots(e)`.
 * - ORSet remove(e): empty store, context `dots(e)`: removes what was
 *   observed; an add concurrent with the remove has a dot the remover never
 *   saw, so the add wins.
 * - GSet add(e): a new dot for an element not yet present; never removes.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotMap, DotSet, storeDots } from '../causal/dot-store.ts'
import { ConcordError, DecodeError, ErrorCodes } from '../errors.ts'
import type { DotAllocator } from './dot-allocator.ts'
import { canonicalJson, type Json } from './json.ts'
import type { CausalState } from './state-codec.ts'
import type { NativeTypeDef } from './type-def.ts'

/** The store of a set: element key -> dots of its live adds. */
export type SetStore = DotMap

/** The elements, in canonical order (sorted by canonical JSON text). */
export function setValues(store: SetStore): Json[] {
  return [...store.entries.keys()].sort().map((key) => JSON.parse(key) as Json)
}

/** Whether `element` is in the set. */
export function setHas(store: SetStore, element: unknown): boolean {
  return store.entries.has(canonicalJson(element))
}

/** ORSet delta adding `element` (superseding its observed adds). */
export function orsetAdd(store: SetStore, alloc: DotAllocator, element: unknown): CausalState<SetStore> {
  const key = canonicalJson(element)
  const d = alloc.next()
  const existing = store.entries.get(key) as DotSet | undefined
  const delta = new DotMap()
  delta.setChild(key, new DotSet([d]))
  return { store: delta, ctx: CausalContext.of([d, ...(existing?.dots ?? [])]) }
}

/** ORSet delta removing `element` (its observed adds), or null when absent. */
export function orsetRemove(store: SetStore, element: unknown): CausalState<SetStore> | null {
  const existing = store.entries.get(canonicalJson(element)) as DotSet | undefined
  if (!existing) return null
  return { store: new DotMap(), ctx: CausalContext.of(existing.dots) }
}

/** GSet delta adding `element`, or null when it is already there. */
export function gsetAdd(store: SetStore, alloc: DotAllocator, element: unknown): CausalState<SetStore> | null {
  const key = canonicalJson(element)
  if (store.entries.has(key)) return null
  const d = alloc.next()
  const delta = new DotMap()
  delta.setChild(key, new DotSet([d]))
  return { store: delta, ctx: CausalContext.of([d]) }
}

/** Delta adding the elements of `past` that `current` lacks and (ORSet) removing those it should not have. */
function restoreSet(current: SetStore, past: SetStore, alloc: DotAllocator, removing: boolean): CausalState<SetStore> | null {
  const delta = new DotMap()
  const ctx = new CausalContext()
  for (const key of past.entries.keys()) {
    if (current.entries.has(key)) continue
    const d = alloc.next()
    delta.setChild(key, new DotSet([d]))
    ctx.add(d)
  }
  for (const [key, child] of current.entries) {
    if (past.entries.has(key)) continue
    if (!removing) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'gset: cannot go back to a smaller set')
    for (const d of storeDots(child)) ctx.add(d)
  }
  return ctx.isEmpty ? null : { store: delta, ctx }
}

/** ORSet behaviour. */
export const orsetDef: NativeTypeDef<SetStore> = {
  tag: 'orset',
  empty: () => new DotMap(),
  value: setValues,
  restore: (current, past, alloc) => restoreSet(current, past, alloc, true),
}

/** GSet behaviour. */
export const gsetDef: NativeTypeDef<SetStore> = {
  tag: 'gset',
  empty: () => new DotMap(),
  value: setValues,
  restore: (current, past, alloc) => restoreSet(current, past, alloc, false),
  validateDelta(delta) {
    // A grow-only set never removes: every dot of a delta's context is an add it carries.
    const added = CausalContext.of(storeDots(delta.store))
    if (!delta.ctx.isSubsetOf(added)) throw new DecodeError('gset: a delta may not remove elements')
  },
}
