/**
 * EWFlag (enable-wins flag) as a causal CRDT: a dot set. enable() is a new
 * dot superseding the observed ones; disable() removes the observed dots.
 * An enable concurrent with a disable has a dot the disabler never saw, so
 * enable wins. The flag is on while the set holds a dot.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotSet } from '../causal/dot-store.ts'
import type { DotAllocator } from './dot-allocator.ts'
import type { CausalState } from './state-codec.ts'
import type { NativeTypeDef } from './type-def.ts'

/** Whether the flag is enabled. */
export function flagEnabled(store: DotSet): boolean {
  return store.dots.length > 0
}

/** Delta of enable(). */
export function flagEnable(store: DotSet, alloc: DotAllocator): CausalState<DotSet> {
  const d = alloc.next()
  return { store: new DotSet([d]), ctx: CausalContext.of([d, ...store.dots]) }
}

/** Delta of disable(), or null when already disabled. */
export function flagDisable(store: DotSet): CausalState<DotSet> | null {
  if (store.dots.length === 0) return null
  return { store: new DotSet(), ctx: CausalContext.of(store.dots) }
}

/** EWFlag behaviour. */
export const ewflagDef: NativeTypeDef<DotSet> = {
  tag: 'ewflag',
  empty: () => new DotSet(),
  value: flagEnabled,
  restore(current, past, alloc) {
    if (flagEnabled(current) === flagEnabled(past)) return null
    return flagEnabled(past) ? flagEnable(current, alloc) : flagDisable(current)
  },
}
