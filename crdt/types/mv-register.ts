/**
 * MVRegister (multi-value register) as a causal CRDT (see
 * register-core.ts): the value is every concurrent value, distinct, sorted
 * by canonical JSON (an empty array before the first write). Its core,
 * store codec, view and replica class.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotFun } from '../causal/dot-store.ts'
import type { ReplicaOptions } from '../replica.ts'
import { CausalReplica } from './causal-replica.ts'
import { defineNativeType } from './define-native-type.ts'
import type { DotAllocator } from './dot-allocator.ts'
import { canonicalJson, parseCanonicalJson, type Json } from './json.ts'
import type { ValueCodec, NativeTypeDef } from './native-type.ts'
import { registerClear } from './register-core.ts'
import type { CausalState } from './state-codec.ts'
import { View } from './view.ts'

/** The store of an MVRegister. */
export type MVRegisterStore = DotFun<Json>

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

const jsonCodec: ValueCodec<Json> = {
  write: (e, v) => {
    e.writeString(canonicalJson(v))
  },
  read: (d) => parseCanonicalJson(d.readString()),
}

/** MVRegister: the catalog's entry. */
export const mvRegisterType: NativeTypeDef<MVRegisterStore, 'mv-register'> = defineNativeType({
  tag: 'mv-register',
  code: 6,
  spec: { kind: 'fun', values: jsonCodec as ValueCodec<unknown> },
  precedence: 2,
  opener: 'mvRegister',
  field: { accessor: 'mvRegister', view: (owner, path) => new MVRegisterView(owner, path) },
  create: (options) => new MVRegisterReplica(options),
  empty: () => new DotFun<Json>(),
  value: mvValues,
  restore(current, past, alloc) {
    const want = mvValues(past)
    if (canonicalJson(want) === canonicalJson(mvValues(current))) return null
    return want.length === 0 ? registerClear(current) : mvWrite(current, alloc, want)
  },
})

/** A multi-value register: keeps every concurrent write. */
export class MVRegisterView<T extends Json = Json> extends View {
  /** Writes `value`, superseding every value seen here. */
  set(value: T): boolean {
    return this.change<MVRegisterStore>((store, alloc) => mvWrite(store, alloc, [value]))
  }

  /** Removes the values seen here (false when empty). */
  clear(): boolean {
    return this.change<MVRegisterStore>((store) => registerClear(store))
  }

  /** The concurrent values, distinct, in canonical order. */
  values(): T[] {
    return mvValues(this.store<MVRegisterStore>()) as T[]
  }
}

/** Multi-value register: every concurrent value, distinct, in canonical order. */
export class MVRegisterReplica<T extends Json = Json> extends CausalReplica<MVRegisterStore> {
  private readonly view = new MVRegisterView<T>(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super(mvRegisterType, options)
  }
  /** Writes `value`, superseding every value seen here. */
  set(value: T): boolean {
    return this.view.set(value)
  }
  /** Removes the values seen here. */
  clear(): boolean {
    return this.view.clear()
  }
  /** The concurrent values. */
  values(): T[] {
    return this.view.values()
  }
  /** The concurrent values. */
  override value(): T[] {
    return this.view.values()
  }
}

declare module '../catalog.ts' {
  interface TypedOpeners<O> {
    /** A multi-value register (keeps concurrent writes). */
    mvRegister<T extends Json = Json>(name: string, options?: O): Promise<MVRegisterReplica<T>>
  }
}

declare module './ormap.ts' {
  interface ORMapFields {
    /** The multi-value register field `name`. */
    mvRegister<T extends Json = Json>(name: string): MVRegisterView<T>
  }
}
