/**
 * What the two sets share (gset.ts, orset.ts): a dot map from element (its
 * canonical JSON text) to the dot set of the adds that are live for it;
 * its value, membership, the restore of a past value, and the store spec.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotMap, DotSet, storeDots } from '../causal/dot-store.ts'
import { ConcordError, ErrorCodes } from '../errors.ts'
import type { DotAllocator } from './dot-allocator.ts'
import { canonicalJson, parseCanonicalJson, type Json } from './json.ts'
import type { StoreSpec } from './native-type.ts'
import type { CausalState } from './state-codec.ts'

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

/** Delta adding the elements of `past` that `current` lacks and (ORSet) removing those it should not have. */
export function restoreSet(current: SetStore, past: SetStore, alloc: DotAllocator, removing: boolean): CausalState<SetStore> | null {
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

const dotSetSpec: StoreSpec = { kind: 'set' }

/** Keys of a set's dot map are canonical JSON texts of the elements. */
export const elementMapSpec: StoreSpec = {
  kind: 'map',
  child(key) {
    parseCanonicalJson(key)
    return dotSetSpec
  },
}
