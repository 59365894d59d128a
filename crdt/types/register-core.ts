/**
 * What the two registers share (lww-register.ts, mv-register.ts): a dot
 * fun where a write is a new dot superseding every observed dot, so after a
 * join the store holds the writes that are concurrent with each other; and
 * the clear that removes the observed writes.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotFun } from '../causal/dot-store.ts'
import type { CausalState } from './state-codec.ts'

/** Delta clearing the register (removing the observed writes), or null when empty. */
export function registerClear<V>(store: DotFun<V>): CausalState<DotFun<V>> | null {
  if (store.entries.length === 0) return null
  return { store: new DotFun<V>(), ctx: CausalContext.of(store.entries.map((e) => e.dot)) }
}
