/**
 * ORSet (add-wins, observed-remove set of JSON values) as a causal CRDT
 * (see set-core.ts):
 * - add(e): `{e: {new dot}}`, context `{new dot} ∪ dots(e)`.
 * - remove(e): empty store, context `dots(e)`: removes what was observed;
 *   an add concurrent with the remove has a dot the remover never saw, so
 *   the add wins.
 * Its core, view and replica class.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotMap, DotSet } from '../causal/dot-store.ts'
import type { ReplicaOptions } from '../replica.ts'
import { CausalReplica } from './causal-replica.ts'
import { defineNativeType } from './define-native-type.ts'
import type { NativeTypeDef } from './native-type.ts'
import type { DotAllocator } from './dot-allocator.ts'
import { canonicalJson, type Json } from './json.ts'
import { elementMapSpec, restoreSet, setHas, setValues, type SetStore } from './set-core.ts'
import type { CausalState } from './state-codec.ts'
import { View } from './view.ts'

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

/** ORSet: the catalog's entry. */
export const orsetType: NativeTypeDef<SetStore, 'orset'> = defineNativeType({
  tag: 'orset',
  code: 4,
  spec: elementMapSpec,
  precedence: 5,
  opener: 'set',
  field: { accessor: 'orset', view: (owner, path) => new ORSetView(owner, path) },
  create: (options) => new ORSetReplica(options),
  empty: () => new DotMap(),
  value: setValues,
  restore: (current, past, alloc) => restoreSet(current, past, alloc, true),
})

/** An add-wins observed-remove set of JSON values. */
export class ORSetView<T extends Json = Json> extends View {
  /** Adds `element` (a new add, so it also wins over concurrent removes). */
  add(element: T): boolean {
    return this.change<SetStore>((store, alloc) => orsetAdd(store, alloc, element))
  }

  /** Removes `element` as observed here (false when absent). */
  delete(element: T): boolean {
    return this.change<SetStore>((store) => orsetRemove(store, element))
  }

  /** Whether `element` is in the set (by canonical JSON). */
  has(element: T): boolean {
    return setHas(this.store<SetStore>(), element)
  }

  /** The elements in canonical order. */
  values(): T[] {
    return setValues(this.store<SetStore>()) as T[]
  }

  /** Number of elements. */
  get size(): number {
    return this.store<SetStore>().entries.size
  }
}

/** Add-wins observed-remove set of JSON values (identity: canonical JSON). */
export class ORSetReplica<T extends Json = Json> extends CausalReplica<SetStore> {
  private readonly view = new ORSetView<T>(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super(orsetType, options)
  }
  /** Adds `element`. */
  add(element: T): boolean {
    return this.view.add(element)
  }
  /** Removes `element` as observed here (false when absent). */
  delete(element: T): boolean {
    return this.view.delete(element)
  }
  /** Whether `element` is in the set. */
  has(element: T): boolean {
    return this.view.has(element)
  }
  /** The elements in canonical order. */
  values(): T[] {
    return this.view.values()
  }
  /** Number of elements. */
  get size(): number {
    return this.view.size
  }
  /** The elements in canonical order. */
  override value(): T[] {
    return this.view.values()
  }
}

declare module '../catalog.ts' {
  interface TypedOpeners<O> {
    /** An add-wins observed-remove set of JSON values. */
    set<T extends Json = Json>(name: string, options?: O): Promise<ORSetReplica<T>>
  }
}

declare module './ormap.ts' {
  interface ORMapFields {
    /** The add-wins set field `name`. */
    orset<T extends Json = Json>(name: string): ORSetView<T>
  }
}
