/**
 * GCounter (grow-only counter) as a causal CRDT: a dot fun of each
 * replica's cumulative total (see counter-core.ts). Its core (increment,
 * value, restore), store codec, view and replica class.
 */
import { CausalContext } from '../causal/causal-context.ts'
import { DotFun } from '../causal/dot-store.ts'
import { ConcordError, DecodeError, ErrorCodes } from '../errors.ts'
import type { ReplicaOptions } from '../replica.ts'
import { CausalReplica } from './causal-replica.ts'
import { checkAmount, checkTotal, newestOf, newestPerReplica, viewAmount } from './counter-core.ts'
import { defineNativeType } from './define-native-type.ts'
import type { DotAllocator } from './dot-allocator.ts'
import type { ValueCodec, NativeTypeDef } from './native-type.ts'
import type { CausalState } from './state-codec.ts'
import { View } from './view.ts'

/** The store of a GCounter. */
export type GCounterStore = DotFun<number>

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

const countCodec: ValueCodec<number> = {
  write: (e, v) => {
    e.writeVarUint(v)
  },
  read: (d) => {
    const v = d.readVarUint()
    if (v < 1) throw new DecodeError('gcounter: a total must be at least 1')
    return v
  },
}

/** GCounter: the catalog's entry. */
export const gcounterType: NativeTypeDef<GCounterStore, 'gcounter'> = defineNativeType({
  tag: 'gcounter',
  code: 1,
  spec: { kind: 'fun', values: countCodec as ValueCodec<unknown> },
  precedence: 4,
  opener: 'gcounter',
  field: { accessor: 'gcounter', view: (owner, path) => new GCounterView(owner, path) },
  create: (options) => new GCounterReplica(options),
  empty: () => new DotFun<number>(),
  value: gcounterValue,
  restore(current, past, alloc) {
    const diff = gcounterValue(past) - gcounterValue(current)
    if (diff === 0) return null
    if (diff < 0) throw new ConcordError(ErrorCodes.INVALID_ARGUMENT, 'gcounter: cannot go back to a smaller value')
    return gcounterIncrement(current, alloc, diff)
  },
})

/** A grow-only counter. */
export class GCounterView extends View {
  /** Adds `n` (default 1). */
  increment(n = 1): boolean {
    if (viewAmount(n) === 0) return false
    return this.change<GCounterStore>((store, alloc) => gcounterIncrement(store, alloc, n))
  }

  /** The count. */
  value(): number {
    return gcounterValue(this.store<GCounterStore>())
  }
}

/** Grow-only counter. */
export class GCounterReplica extends CausalReplica<GCounterStore> {
  private readonly view = new GCounterView(this as CausalReplica, [])
  constructor(options: ReplicaOptions) {
    super(gcounterType, options)
  }
  /** Adds `n` (default 1; 0 does nothing). */
  increment(n = 1): boolean {
    return this.view.increment(n)
  }
  /** The count. */
  override value(): number {
    return this.view.value()
  }
}

declare module '../catalog.ts' {
  interface TypedOpeners<O> {
    /** A grow-only counter. */
    gcounter(name: string, options?: O): Promise<GCounterReplica>
  }
}

declare module './ormap.ts' {
  interface ORMapFields {
    /** The grow-only counter field `name`. */
    gcounter(name: string): GCounterView
  }
}
