/**
 * What the generic replica machinery needs to know of each native type: its
 * empty store, its value, how to compute a restoring delta, and the checks
 * and clock observations that go beyond the codec.
 */
import type { DotStore } from '../causal/dot-store.ts'
import type { HybridClock } from '../hlc.ts'
import type { DotAllocator } from './dot-allocator.ts'
import type { Json } from './json.ts'
import type { CausalState } from './state-codec.ts'
import type { NativeType } from './store-spec.ts'

/** Per-type behaviour of a native CRDT. */
export interface NativeTypeDef<S extends DotStore = DotStore> {
  readonly tag: NativeType
  /** The bottom store. */
  empty(): S
  /** The value as plain JSON. */
  value(store: S): Json
  /**
   * A delta that brings `current` to the value of `past`, or null when the
   * values are equal. Throws ConcordError `CONCORD_INVALID_ARGUMENT` when the
   * type cannot go back (a grow-only type asked to shrink).
   */
  restore(current: S, past: S, alloc: DotAllocator, clock: HybridClock): CausalState<S> | null
  /** Advances the clock past every timestamp in the store (LWW registers, maps holding them). */
  observe?(store: S, clock: HybridClock): void
  /** Extra checks of a top-level delta (DecodeError when it breaks the type's rules). */
  validateDelta?(delta: CausalState<S>): void
}
