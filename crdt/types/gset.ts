/**
 * GSet (grow-only set of JSON values) as a causal CRDT (see set-core.ts):
 * add(e) is a new dot for an element not yet present; it never removes.
 * Its core, view and replica class.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotMap, DotSet, storeDots } from '../causal/dot-store.ts'
import { DecodeError } from '../errors.ts'
import type { ReplicaOptions } from '../replica.ts'
import { CausalReplica } from './causal-replica.ts'
import { defineNativeType } from './define-native-type.ts'
import type { NativeTypeDef } from './native-type.ts'
import type { DotAllocator } from './dot-allocator.ts'
import { canonicalJson, type Json } from './json.ts'
import { elementMapSpec, restoreSet, setHas, setValues, type SetStore } from './set-core.ts'
import type { CausalState } from './state-codec.ts'
import { View } from './view.ts'

/** GSet delta adding `element`, or null when it is already there. */
export function gsetAdd(store: SetStore, alloc: DotAllocator, element: unknown): CausalState<SetStore> | null {
  const key = canonicalJson(element)
  if (store.entries.has(key)) return null
  const d = alloc.next()
  const delta = new DotMap()
  delta.setChild(key, new DotSet([d]))
  return { store: delta, ctx: CausalContext.of([d]) }
}

/** GSet: the catalog's entry. */
export const gsetType: NativeTypeDef<SetStore, 'gset'> = defineNativeType({
  tag: 'gset',
  code: 3,
  spec: elementMapSpec,
  precedence: 6,
  opener: 'gset',
  field: { accessor: 'gset', view: (owner, path) => new GSetView(owner, path) },
  create: (options) => new GSetReplica(options),
  empty: () => new DotMap(),
  value: setValues,
  restore: (current, past, alloc) => restoreSet(current, past, alloc, false),
  validateDelta(delta) {
    // A grow-only set never removes: every dot of a delta's context is an add it carries.
    const added = CausalContext.of(storeDots(delta.store))
    if (!delta.ctx.isSubsetOf(added)) throw new DecodeError('gset: a delta may not remove elements')
  },
})

/** A grow-only set of JSON values. */
export class GSetView<T extends Json = Json> extends View {
  /** Adds `element` (false when already there). */
  add(element: T): boolean {
    return this.change<SetStore>((store, alloc) => gsetAdd(store, alloc, element))
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

/** Grow-only set of JSON values (identity: canonical JSON). */
export class GSetReplica<T extends Json = Json> extends CausalReplica<SetStore> {
  private readonly view = new GSetView<T>(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super(gsetType, options)
  }
  /** Adds `element` (false when already there). */
  add(element: T): boolean {
    return this.view.add(element)
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
    /** A grow-only set of JSON values. */
    gset<T extends Json = Json>(name: string, options?: O): Promise<GSetReplica<T>>
  }
}

declare module './ormap.ts' {
  interface ORMapFields {
    /** The grow-only set field `name`. */
    gset<T extends Json = Json>(name: string): GSetView<T>
  }
}
